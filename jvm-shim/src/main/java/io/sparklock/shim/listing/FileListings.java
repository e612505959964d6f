package io.sparklock.shim.listing;

import io.sparklock.shim.facts.FactsExtractor;
import io.sparklock.shim.facts.ReadFacts;
import io.sparklock.shim.facts.Refs;
import io.sparklock.shim.listing.ListingLedger.PathEntry;
import io.sparklock.shim.listing.ListingLedger.Stamp;
import io.sparklock.shim.util.ScalaInterop;
import io.sparklock.shim.wire.Facts.ObjectRef;
import io.sparklock.shim.wire.Facts.TableRef;
import io.sparklock.shim.wire.Facts;
import io.sparklock.shim.wire.Messages;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTablePartition;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.datasources.CatalogFileIndex;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.FileStatusCache;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.InMemoryFileIndex;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.PartitionPath;
import org.apache.spark.sql.types.StructField;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Once the locks are granted, re-lists what a writer may have changed since Spark listed the
 * files of the file-based tables a statement reads -- and only that.
 *
 * <p>Spark lists a table's files before any lock can be taken: when it resolves the relation
 * (or reuses the listing cached with the session's relation) and when partition pruning builds
 * the pruned file index. A writer that committed between that listing and the grant has
 * replaced those files, and the read would fail with {@code FAILED_READ_FILE.FILE_NOT_EXIST}
 * (or miss the new data). The scans compute their file lists lazily, at execution, from these
 * indexes, so what is refreshed here is what the scans read.
 *
 * <p>What is fresh: Python answers the grant with the write epochs of the tables and partitions
 * read ({@link Messages.ReadEpochs}); {@link ListingLedger} remembers the epochs under which
 * sparklock itself listed. Per relation:
 * <ul>
 *   <li>a catalog-partitioned table read whole ({@link CatalogFileIndex}: its scan lists from the
 *       session's file status cache at execution) -- every partition directory whose cache entry
 *       is not the one sparklock put at an equal epoch is listed again, into the cache;
 *   <li>a pruned read of such a table ({@link InMemoryFileIndex} over partition directories) --
 *       the same, and the index is rebuilt from the cache if it holds anything else than those
 *       entries;
 *   <li>any other file index (unpartitioned table, partitioning by directories only) -- the
 *       whole index, unless sparklock refreshed this very index at an equal table epoch;
 *   <li>a path read, a relation without epochs, an unknown clock -- the whole index, as always.
 * </ul>
 * A failure of the fine-grained way (Spark internals it reaches by reflection, see
 * {@link PathListing}) falls back to refreshing the whole index.
 *
 * <p>Off with {@code spark.sparklock.read.refreshListing=false}: Python owns the key and answers
 * {@code acquire} with its value ({@link Messages.Acquired#refreshListing}).
 * Not covered: bucketed scans whose file list Spark computed while planning, and V2 file scans
 * (the session catalog reads files through V1 unless {@code spark.sql.sources.useV1SourceList}
 * is changed).
 */
public final class FileListings {
  private static final Logger LOG = LoggerFactory.getLogger("io.sparklock.shim.FileListings");

  /** Indexes refreshed whole, partition directories listed one by one, listings found fresh. */
  static final AtomicLong WHOLE = new AtomicLong();

  static final AtomicLong PATHS = new AtomicLong();
  static final AtomicLong FRESH = new AtomicLong();
  /** Time spent deciding and re-listing after grants (ns). */
  static final AtomicLong NANOS = new AtomicLong();

  private FileListings() {}

  /** Counters for tests and benchmarks: {@code whole=N paths=N fresh=N}. */
  public static String stats() {
    return "whole=" + WHOLE.get() + " paths=" + PATHS.get() + " fresh=" + FRESH.get()
        + " micros=" + NANOS.get() / 1000;
  }

  /** Refreshes what may be stale of every file relation in {@code plan}; returns how many. */
  public static int refreshAfterGrant(
      LogicalPlan plan, SparkSession session, Facts facts, Messages.ReadEpochs epochs) {
    if (plan == null) {
      return 0;
    }
    Map<FileIndex, LogicalRelation> seen = new IdentityHashMap<>();
    FactsExtractor.walkPlan(plan, p -> {
      if (p instanceof LogicalRelation lr && lr.relation() instanceof HadoopFsRelation fs) {
        seen.putIfAbsent(fs.location(), lr);
      }
    });
    long start = System.nanoTime();
    for (Map.Entry<FileIndex, LogicalRelation> e : seen.entrySet()) {
      FileIndex index = e.getKey();
      Epochs te = Epochs.of(e.getValue(), facts, epochs);
      try {
        refresh(index, e.getValue(), te, session);
      } catch (ReflectiveOperationException | java.io.IOException | RuntimeException failure) {
        LOG.debug("sparklock: re-listing {} by partition failed ({}); refreshing it whole",
            index, failure.toString());
        whole(index, null);
      }
    }
    NANOS.addAndGet(System.nanoTime() - start);
    if (!seen.isEmpty() && LOG.isDebugEnabled()) {
      LOG.debug("sparklock: checked {} file index(es) after the grant in {} ms ({})", seen.size(),
          (System.nanoTime() - start) / 1_000_000.0, stats());
    }
    return seen.size();
  }

  private static void refresh(FileIndex index, LogicalRelation lr, Epochs te, SparkSession session)
      throws ReflectiveOperationException, java.io.IOException {
    if (te == null) {
      whole(index, null);
      return;
    }
    CatalogTable table = lr.catalogTable().get();
    boolean catalogPartitioned =
        table.partitionColumnNames().nonEmpty() && table.tracksPartitionsInCatalog();
    if (catalogPartitioned && index instanceof CatalogFileIndex c) {
      FileStatusCache cache = PathListing.cacheOf(c);
      if (cache == null) {
        FRESH.incrementAndGet(); // no cache: the scan lists every directory at execution
        return;
      }
      Stamp tableStamp = new Stamp(te.clock, te.whole);
      Map<Path, Map<String, String>> dirs = ListingLedger.dirs(c, tableStamp);
      if (dirs == null) {
        dirs = new LinkedHashMap<>();
        for (CatalogTablePartition part : ScalaInterop.list(session.sessionState().catalog()
            .listPartitions(table.identifier(), scala.Option.empty()))) {
          Path path = new Path(part.location());
          FileSystem fs = path.getFileSystem(c.hadoopConf());
          dirs.put(path.makeQualified(fs.getUri(), fs.getWorkingDirectory()),
              Refs.orderedSpec(part.spec(), table.partitionColumnNames()));
        }
        ListingLedger.rememberDirs(c, tableStamp, dirs);
      }
      relistChanged(cache, dirs, te, session, null);
    } else if (catalogPartitioned && index instanceof InMemoryFileIndex m) {
      FileStatusCache cache = PathListing.cacheOf(m);
      if (cache == null) {
        whole(index, null);
        return;
      }
      StructField[] fields = m.partitionSpec().partitionColumns().fields();
      String tz = session.sessionState().conf().sessionLocalTimeZone();
      Map<Path, Map<String, String>> dirs = new LinkedHashMap<>();
      for (PartitionPath part : ScalaInterop.list(m.partitionSpec().partitions())) {
        dirs.put(part.path(), ReadFacts.specOf(part, fields, tz));
      }
      relistChanged(cache, dirs, te, session, m);
    } else {
      Stamp now = new Stamp(te.clock, te.whole);
      if (now.known() && now.equals(ListingLedger.indexStamp(index))) {
        FRESH.incrementAndGet();
      } else {
        whole(index, now);
      }
    }
  }

  /**
   * Lists again each directory of {@code dirs} whose cache entry is not fresh, into the cache;
   * with {@code index} (a pruned index, holding its own copy of the entries) also each one whose
   * files in the index are not those of the entry, and rebuilds the index from the cache then.
   */
  private static void relistChanged(FileStatusCache cache, Map<Path, Map<String, String>> dirs,
      Epochs te, SparkSession session, InMemoryFileIndex index)
      throws ReflectiveOperationException {
    scala.collection.Map<Path, FileStatus[]> held = index == null ? null
        : index.leafDirToChildrenFiles();
    List<Path> changed = new ArrayList<>();
    Map<Path, Stamp> stamps = new HashMap<>();
    for (Map.Entry<Path, Map<String, String>> d : dirs.entrySet()) {
      Path dir = d.getKey();
      Long epoch = te.epochOf(d.getValue());
      Stamp now = epoch == null ? new Stamp(null, 0) : new Stamp(te.clock, epoch);
      stamps.put(dir, now);
      PathEntry entry = ListingLedger.pathEntry(cache, dir);
      FileStatus[] fresh = entry == null ? null
          : entry.freshAs(now, ScalaInterop.orNull(cache.getLeafFiles(dir)));
      if (fresh != null && held != null) {
        FileStatus[] mine = ScalaInterop.orNull(held.get(dir));
        mine = mine == null ? new FileStatus[0] : mine;
        if ((fresh.length > 0 && mine.length == 0) || !ListingLedger.allIn(mine, fresh)) {
          fresh = null; // the index was built from an older listing of the directory
        }
      }
      if (fresh == null) {
        changed.add(dir);
      }
    }
    FRESH.addAndGet(dirs.size() - changed.size());
    if (changed.isEmpty()) {
      return;
    }
    Map<Path, FileStatus[]> listed = PathListing.list(session, changed);
    for (Path dir : changed) {
      FileStatus[] files = listed.getOrDefault(dir, new FileStatus[0]);
      cache.putLeafFiles(dir, files);
      ListingLedger.stampPath(cache, dir, stamps.get(dir), files);
    }
    PATHS.addAndGet(changed.size());
    if (index != null) {
      PathListing.rebuildFromCache(index);
    }
  }

  /** Refreshes the whole index, and remembers under which epoch (null: none). */
  private static void whole(FileIndex index, Stamp stamp) {
    index.refresh();
    WHOLE.incrementAndGet();
    if (stamp != null) {
      ListingLedger.stampIndex(index, stamp);
    }
  }

  /** The epochs Python answered for one relation's table; null when it has none. */
  static final class Epochs {
    final String clock;
    final long whole;
    final long base;
    private final List<Map<String, String>> specs;
    private final Map<Integer, Long> sparse;
    private Map<Map<String, String>, Integer> positions;

    private Epochs(String clock, Messages.TableEpochs t, List<Map<String, String>> specs) {
      this.clock = clock;
      this.whole = t.whole();
      this.base = t.base();
      this.specs = specs == null ? Collections.emptyList() : specs;
      this.sparse = new HashMap<>();
      List<Integer> idx = t.indexes() == null ? List.of() : t.indexes();
      for (int i = 0; i < idx.size(); i++) {
        sparse.put(idx.get(i), t.epochs().get(i));
      }
    }

    static Epochs of(LogicalRelation lr, Facts facts, Messages.ReadEpochs epochs) {
      if (epochs == null || epochs.clock() == null || facts == null || epochs.tables() == null
          || !lr.catalogTable().isDefined()) {
        return null;
      }
      CatalogTable t = lr.catalogTable().get();
      String db = ScalaInterop.orNull(t.identifier().database());
      for (Messages.TableEpochs te : epochs.tables()) {
        if (te.read() < 0 || te.read() >= facts.reads().size()) {
          continue;
        }
        ObjectRef ref = facts.reads().get(te.read());
        if (ref instanceof TableRef r
            && t.identifier().table().equalsIgnoreCase(r.table())
            && db != null && db.equalsIgnoreCase(r.database())) {
          return new Epochs(epochs.clock(), te, r.partitions());
        }
      }
      return null;
    }

    /** A partition's epoch; null (never fresh) for one the statement did not name. */
    Long epochOf(Map<String, String> spec) {
      if (positions == null) {
        positions = new HashMap<>();
        for (int i = 0; i < specs.size(); i++) {
          positions.putIfAbsent(specs.get(i), i);
        }
      }
      Integer at = positions.get(spec);
      if (at == null) {
        return null;
      }
      return sparse.getOrDefault(at, base);
    }
  }
}
