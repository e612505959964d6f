package io.sparklock.shim.listing;

import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Objects;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;

/**
 * What this JVM knows of the freshness of the file listings Spark keeps (BRIDGE.md, "What a read
 * reads"): for a listing sparklock made itself after a grant, the write epoch of what it listed
 * at that grant ({@link Stamp}). A listing is fresh at a later grant when the epoch is still the
 * same: no writer can have committed to that table or partition since.
 *
 * <p>Two kinds of listing, weakly keyed by identity (never by {@code equals}: two indexes of one
 * table are equal in Spark's eyes), so nothing here outlives what it describes:
 * <ul>
 *   <li>a file index that lists by itself (an unpartitioned table's, a table partitioned by
 *       directories only): one stamp for the whole index, set when sparklock refreshed it;
 *   <li>a session's file status cache (one per catalog-partitioned table relation): per
 *       partition directory, the stamp and the very array of statuses sparklock put there. A
 *       cache entry that is not that array any more (Spark re-listed, evicted or invalidated it)
 *       is unknown, whatever its stamp said.
 * </ul>
 */
final class ListingLedger {
  private ListingLedger() {}

  /** A clock reading and an epoch under it: equal stamps mean "no write in between". */
  record Stamp(String clock, long epoch) {
    boolean known() {
      return clock != null;
    }
  }

  /** One partition directory's listing, as sparklock put it into a cache. */
  record PathEntry(Stamp stamp, WeakReference<FileStatus[]> files) {
    /** The array sparklock put, if the cache still holds exactly it, stamped {@code now}. */
    FileStatus[] freshAs(Stamp now, FileStatus[] cached) {
      FileStatus[] mine = files.get();
      return now.known() && now.equals(stamp) && mine != null && mine == cached ? mine : null;
    }
  }

  /** A table's partition directories (path → spec) as the catalog named them under a stamp. */
  record Dirs(Stamp stamp, Map<Path, Map<String, String>> dirs) {}

  private static final WeakIdentityMap<Object, Stamp> INDEXES = new WeakIdentityMap<>();
  private static final WeakIdentityMap<Object, Dirs> DIRS = new WeakIdentityMap<>();

  /**
   * The partition directories of a catalog index as last asked under {@code now}, or null. A
   * partition added, dropped or moved is written under an EXCLUSIVE lock (or by a foreign
   * client): the table's whole epoch, or the clock, differs then.
   */
  static Map<Path, Map<String, String>> dirs(Object index, Stamp now) {
    Dirs d = DIRS.get(index);
    return d != null && now.known() && now.equals(d.stamp()) ? d.dirs() : null;
  }

  static void rememberDirs(Object index, Stamp now, Map<Path, Map<String, String>> dirs) {
    if (now.known()) {
      DIRS.put(index, new Dirs(now, dirs));
    }
  }
  private static final WeakIdentityMap<Object, Map<Path, PathEntry>> CACHES =
      new WeakIdentityMap<>();

  static Stamp indexStamp(Object index) {
    return INDEXES.get(index);
  }

  static void stampIndex(Object index, Stamp stamp) {
    if (stamp.known()) {
      INDEXES.put(index, stamp);
    } else {
      INDEXES.remove(index);
    }
  }

  static PathEntry pathEntry(Object cache, Path path) {
    Map<Path, PathEntry> entries = CACHES.get(cache);
    if (entries == null) {
      return null;
    }
    synchronized (entries) {
      return entries.get(path);
    }
  }

  static void stampPath(Object cache, Path path, Stamp stamp, FileStatus[] files) {
    Map<Path, PathEntry> entries = CACHES.computeIfAbsent(cache, k -> new HashMap<>());
    synchronized (entries) {
      if (stamp.known()) {
        entries.put(path, new PathEntry(stamp, new WeakReference<>(files)));
      } else {
        entries.remove(path);
      }
    }
  }

  /** A map with weakly held keys compared by identity (java.util has none). */
  static final class WeakIdentityMap<K, V> {
    private final ReferenceQueue<Object> queue = new ReferenceQueue<>();
    private final Map<Key, V> map = new HashMap<>();

    private static final class Key extends WeakReference<Object> {
      private final int hash;

      Key(Object referent, ReferenceQueue<Object> queue) {
        super(referent, queue);
        this.hash = System.identityHashCode(referent);
      }

      @Override
      public int hashCode() {
        return hash;
      }

      @Override
      public boolean equals(Object o) {
        if (this == o) {
          return true;
        }
        Object mine = get();
        return o instanceof Key k && mine != null && mine == k.get();
      }
    }

    synchronized V get(K key) {
      expunge();
      return map.get(new Key(key, null));
    }

    synchronized void put(K key, V value) {
      expunge();
      map.put(new Key(key, queue), value);
    }

    synchronized void remove(K key) {
      map.remove(new Key(key, null));
    }

    synchronized V computeIfAbsent(K key, java.util.function.Function<K, V> make) {
      V v = get(key);
      if (v == null) {
        v = Objects.requireNonNull(make.apply(key));
        put(key, v);
      }
      return v;
    }

    private void expunge() {
      java.lang.ref.Reference<?> r;
      while ((r = queue.poll()) != null) {
        map.remove(r);
      }
    }
  }

  /** An identity set of statuses, to tell whether an index's files are the array put. */
  static boolean allIn(FileStatus[] some, FileStatus[] of) {
    Map<FileStatus, Boolean> ids = new IdentityHashMap<>(of.length * 2);
    for (FileStatus s : of) {
      ids.put(s, Boolean.TRUE);
    }
    for (FileStatus s : some) {
      if (!ids.containsKey(s)) {
        return false;
      }
    }
    return true;
  }
}
