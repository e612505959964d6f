package io.sparklock.shim.lease;

import org.apache.hadoop.mapreduce.JobContext;
import org.apache.spark.sql.execution.datasources.SQLHadoopMapReduceCommitProtocol;

/**
 * What {@link LeaseCommitProtocol} adds to Spark's protocol, whatever the Scala line: a staging
 * area per job ({@link LeaseCommits#prepare}) and its cleanup. Only {@code commitJob}, whose
 * signature names Scala's {@code Seq}, lives in the per-Scala subclass.
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

  @Override
  public void abortJob(JobContext jobContext) {
    try {
      super.abortJob(jobContext);
    } finally {
      LeaseCommits.cleanup(jobContext, outputPath);
    }
  }

  /** The job commit, the lease checked first and the job's staging area removed after. */
  protected final void commitChecked(JobContext jobContext, Runnable commit) {
    LeaseCommits.beforeCommit(outputPath);
    try {
      commit.run();
    } finally {
      LeaseCommits.cleanup(jobContext, outputPath);
    }
  }
}
