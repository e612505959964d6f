package io.sparklock.shim.lease;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.OutputCommitter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.FileOutputCommitter;
import org.apache.spark.sql.execution.datasources.SQLHadoopMapReduceCommitProtocol;

/**
 * What {@link LeaseCommitProtocol} adds to Spark's protocol, whatever the Scala line: a staging
 * area per job ({@link LeaseCommits#prepare}) and its cleanup, the lease checked before an
 * overwrite's delete of the old data ({@link #deleteWithJob}) and before each delete and rename
 * of the job commit ({@link #commitChecked}). Only {@code commitJob}, whose signature names
 * Scala's {@code Seq}, lives in the per-Scala subclass.
 */
public abstract class LeaseCommitProtocolBase extends SQLHadoopMapReduceCommitProtocol {
  private static final long serialVersionUID = 1L;

  /** The output path the job writes (its staging area is below it). */
  protected final String outputPath;

  protected LeaseCommitProtocolBase(String jobId, String path, boolean dynamicPartitionOverwrite) {
    super(jobId, path, dynamicPartitionOverwrite);
    this.outputPath = path;
  }

  @Override
  public void setupJob(JobContext jobContext) {
    LeaseCommits.prepare(jobContext);
    super.setupJob(jobContext);
  }

  /** The job's committer on the driver (Spark keeps its own private). */
  private transient OutputCommitter jobCommitter;

  @Override
  public OutputCommitter setupCommitter(TaskAttemptContext context) {
    OutputCommitter committer = super.setupCommitter(context);
    jobCommitter = committer;
    return committer;
  }

  /**
   * Hadoop's {@code FileOutputCommitter} aborts a job by deleting {@code <path>/_temporary}
   * whole, with every other job's staging below it: a fenced writer aborting late would delete
   * the staged output of the holder that took its lock. Only this job's staging goes (its own
   * attempt directory, and Spark's staging directory of a dynamic overwrite); other committers
   * abort as they do.
   */
  @Override
  public void abortJob(JobContext jobContext) {
    try {
      if (jobCommitter instanceof FileOutputCommitter) {
        LeaseCommits.deleteQuietly(jobContext, stagingDir());
      } else {
        super.abortJob(jobContext);
      }
    } finally {
      LeaseCommits.cleanup(jobContext, outputPath);
    }
  }

  /**
   * Spark deletes an overwrite's old data (the static partitions' directory, each custom partition
   * location) through this call, before the job runs: a statement whose lease lapsed since its
   * start must not delete what the next holder may already be writing.
   */
  @Override
  public boolean deleteWithJob(FileSystem fs, Path path, boolean recursive) {
    Lease.checkStep("the delete of " + path + " before the job");
    return super.deleteWithJob(fs, path, recursive);
  }

  /**
   * The job commit: the lease checked first, then before each delete and rename the commit makes
   * (a dynamic overwrite's partitions, each task output moved into place), once more after it
   * where the output is Hive's staging (its load, which deletes the old data and moves the new
   * in, follows at once and offers no hook of its own), and the job's staging area removed after.
   */
  protected final void commitChecked(JobContext jobContext, Runnable commit) {
    LeaseCommits.beforeCommit(outputPath);
    String scheme = LeaseCommits.checkSteps(jobContext, outputPath);
    try {
      commit.run();
      if (LeaseCommits.publishedAfterCommit(outputPath)) {
        Lease.checkStep("the Hive load of " + outputPath + " into its table or directory");
      }
    } finally {
      LeaseCommits.stopChecking(jobContext, scheme);
      LeaseCommits.cleanup(jobContext, outputPath);
    }
  }
}
