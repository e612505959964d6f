package io.sparklock.shim.lease;

import java.io.IOException;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.JobContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What {@code LeaseCommitProtocol} (one class per Scala version, for {@code commitJob}'s
 * {@code Seq}) adds to Spark's {@code SQLHadoopMapReduceCommitProtocol} (docs/fencing.md):
 *
 * <ul>
 *   <li><b>A staging area per job.</b> Hadoop's {@code FileOutputCommitter} stages task outputs
 *       under {@code <path>/_temporary/<application attempt id>}, and Spark leaves that id at 0:
 *       every job writing one path shares it, so one job's {@code commitJob} publishes every
 *       committed task output it finds there, another job's included (a fenced writer's tasks
 *       that kept running). Each job gets a random attempt id of its own; the shared
 *       {@code _temporary} is no longer deleted whole at the end of a job (Hadoop's cleanup
 *       would delete the other jobs' staging under them), only the job's own attempt directory.
 *   <li><b>Commit algorithm 1.</b> Algorithm 2 moves each task's output into place when the task
 *       commits, on an executor, where no lease can be checked; 1 moves everything at the job
 *       commit, on the driver.
 *   <li><b>The lease checked before the job commit</b> ({@link Lease#checkCommit}), and before
 *       each delete and rename the commit makes ({@link #checkSteps}).
 * </ul>
 */
final class LeaseCommits {
  private static final Logger LOG = LoggerFactory.getLogger("io.sparklock.shim.LeaseCommits");

  static final String ATTEMPT_ID = "mapreduce.job.application.attempt.id";
  static final String CLEANUP_SKIPPED = "mapreduce.fileoutputcommitter.cleanup.skipped";
  static final String ALGORITHM = "mapreduce.fileoutputcommitter.algorithm.version";
  static final String PENDING_DIR = "_temporary";
  static final String HIVE_STAGING_PREFIX = "-ext-";

  private LeaseCommits() {}

  /** Before Spark's setupJob: the job's own attempt id (the tasks get the same configuration). */
  static void prepare(JobContext job) {
    Configuration conf = job.getConfiguration();
    conf.setInt(ATTEMPT_ID, ThreadLocalRandom.current().nextInt(1, Integer.MAX_VALUE));
    conf.setBoolean(CLEANUP_SKIPPED, true);
    conf.setInt(ALGORITHM, 1);
  }

  /** Before Spark's commitJob: the lease must hold, or nothing becomes visible. */
  static void beforeCommit(String path) {
    Lease.checkCommit("the job commit of " + path);
  }

  /**
   * For the job commit: the output's file system checks the lease before each delete and rename
   * ({@link LeaseCheckedFileSystem}). Returns the scheme wrapped (null: none, the output path
   * unknown or its file system not found: then only the check before the commit holds).
   */
  static String checkSteps(JobContext job, String path) {
    if (path == null) {
      return null;
    }
    Configuration conf = job.getConfiguration();
    try {
      FileSystem real = new Path(path).getFileSystem(conf);
      LeaseCheckedFileSystem.install(conf, real);
      return real.getUri().getScheme();
    } catch (IOException | RuntimeException e) {
      LOG.warn("sparklock: the job commit of {} is checked once only: {}", path, e.toString());
      return null;
    }
  }

  /**
   * Whether the job writes Hive's staging ({@code <stagingdir>_hive_.../-ext-10000}, Spark's
   * {@code SaveAsHiveFile}): its output becomes visible only by the {@code loadTable} /
   * {@code loadPartition} (or the directory rename) that follows the job commit.
   */
  static boolean publishedAfterCommit(String path) {
    return path != null && new Path(path).getName().startsWith(HIVE_STAGING_PREFIX);
  }

  /** After the job commit: the job's configuration as it was (abort and cleanup unchecked). */
  static void stopChecking(JobContext job, String scheme) {
    LeaseCheckedFileSystem.remove(job.getConfiguration(), scheme);
  }

  /** Deletes {@code path} (recursively) if it exists; a failure is logged only. */
  static void deleteQuietly(JobContext job, Path path) {
    try {
      path.getFileSystem(job.getConfiguration()).delete(path, true);
    } catch (IOException | RuntimeException e) {
      LOG.debug("sparklock: deleting {} failed: {}", path, e.toString());
    }
  }

  /** After the job committed or aborted: its own staging goes, the shared parent if empty. */
  static void cleanup(JobContext job, String path) {
    if (path == null) {
      return;
    }
    Configuration conf = job.getConfiguration();
    Path pending = new Path(path, PENDING_DIR);
    Path mine = new Path(pending, Integer.toString(conf.getInt(ATTEMPT_ID, 0)));
    try {
      FileSystem fs = pending.getFileSystem(conf);
      fs.delete(mine, true);
      if (fs.exists(pending) && fs.listStatus(pending).length == 0) {
        fs.delete(pending, false); // another job's staging may appear meanwhile: then it stays
      }
    } catch (IOException | RuntimeException e) {
      LOG.debug("sparklock: cleaning up {} failed: {}", mine, e.toString());
    }
  }
}
