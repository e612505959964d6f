package io.sparklock.shim.lease;

import java.io.IOException;
import java.net.URI;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FilterFileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The file system a job commit of {@code LeaseCommitProtocol} sees: the very (cached) file system
 * Spark would use, with the lease checked before each delete and each rename.
 *
 * <p>Why a file system: Spark's {@code HadoopMapReduceCommitProtocol.commitJob} and Hadoop's
 * {@code FileOutputCommitter.commitJob} run their loops (a dynamic overwrite's delete and rename
 * per partition, the rename of every committed task output) inside one call that offers no
 * callback between two steps. The only thing of theirs the protocol controls is the job's
 * configuration, from which both get their file system; so for the length of the job commit, and
 * on the driver only, the configuration names this class for the output's scheme
 * ({@link #install}). The tasks, other jobs and other statements never see it; a thread that
 * runs no bound statement passes through unchecked.
 *
 * <p>Paths in the job's own staging ({@code _temporary}, {@code .spark-staging-*}) are not
 * checked: nobody else reads them, and their cleanup must run after a refusal too.
 */
public final class LeaseCheckedFileSystem extends FilterFileSystem {
  /** Where {@link #install} keeps what the configuration said before, per scheme. */
  private static final String SAVED = "sparklock.lease.fs.saved.";

  private static final String NONE = "sparklock:unset";

  /** The job commit's key into {@link #WRAPPED}. */
  private static final String TOKEN = "sparklock.lease.fs.token";

  /**
   * The file system each installed commit wraps, so that a wrapper's creation copies no
   * configuration (a copy costs most of a millisecond, several per commit).
   */
  private static final Map<String, FileSystem> WRAPPED = new ConcurrentHashMap<>();

  private static final AtomicLong COMMITS = new AtomicLong();

  public LeaseCheckedFileSystem() {}

  /**
   * Makes {@code conf} hand out this file system, wrapping {@code real}, for {@code real}'s
   * scheme; undone by {@link #remove}.
   */
  static void install(Configuration conf, FileSystem real) {
    String scheme = real.getUri().getScheme();
    if (scheme == null || conf.get(SAVED + implKey(scheme)) != null) {
      return;
    }
    String token = Long.toString(COMMITS.incrementAndGet());
    WRAPPED.put(token, real);
    conf.set(TOKEN, token);
    for (String key : new String[] {implKey(scheme), cacheKey(scheme)}) {
      String old = conf.get(key);
      conf.set(SAVED + key, old == null ? NONE : old);
    }
    conf.set(implKey(scheme), LeaseCheckedFileSystem.class.getName());
    // uncached: the cache's key ignores the configuration, and would hand this wrapper to others
    conf.setBoolean(cacheKey(scheme), true);
  }

  /** Puts back what {@link #install} changed. */
  static void remove(Configuration conf, String scheme) {
    if (scheme == null || conf.get(SAVED + implKey(scheme)) == null) {
      return;
    }
    restore(conf, conf, scheme);
    WRAPPED.remove(conf.get(TOKEN, ""));
    conf.unset(TOKEN);
  }

  private static void restore(Configuration from, Configuration to, String scheme) {
    for (String key : new String[] {implKey(scheme), cacheKey(scheme)}) {
      String old = from.get(SAVED + key);
      if (old == null || NONE.equals(old)) {
        to.unset(key);
      } else {
        to.set(key, old);
      }
      to.unset(SAVED + key);
    }
  }

  private static String implKey(String scheme) {
    return "fs." + scheme + ".impl";
  }

  private static String cacheKey(String scheme) {
    return "fs." + scheme + ".impl.disable.cache";
  }

  /**
   * Wraps the file system the configuration named before {@link #install}: the one installed
   * for the output, or for another authority of its scheme the cached one.
   */
  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    FileSystem real = WRAPPED.get(conf.get(TOKEN, ""));
    if (real != null && Objects.equals(real.getUri().getAuthority(), name.getAuthority())) {
      this.fs = real;
    } else {
      Configuration plain = new Configuration(conf);
      restore(conf, plain, name.getScheme());
      this.fs = FileSystem.get(name, plain);
    }
    setConf(conf);
    this.statistics = getStatistics(name.getScheme(), getClass());
  }

  @Override
  public boolean delete(Path f, boolean recursive) throws IOException {
    if (!staging(f)) {
      Lease.checkStep("the delete of " + f + " in the job commit");
    }
    return fs.delete(f, recursive);
  }

  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    if (!staging(dst)) {
      Lease.checkStep("the rename of " + src + " to " + dst + " in the job commit");
    }
    return fs.rename(src, dst);
  }

  /** The wrapped file system belongs to Hadoop's cache and its other users: left open. */
  @Override
  public void close() {}

  private static boolean staging(Path p) {
    for (Path q = p; q != null; q = q.getParent()) {
      String name = q.getName();
      if (name.equals(LeaseCommits.PENDING_DIR) || name.startsWith(".spark-staging-")) {
        return true;
      }
    }
    return false;
  }
}
