package io.sparklock.shim;

import org.apache.hadoop.mapreduce.JobContext;
import org.apache.spark.internal.io.FileCommitProtocol;
import org.apache.spark.sql.execution.datasources.SQLHadoopMapReduceCommitProtocol;

/**
 * {@code spark.sql.sources.commitProtocolClass} as {@code sparklock.configure} sets it: Spark's
 * own protocol with a staging area per job and the lease checked before the job commit
 * ({@link LeaseCommits}). Scala 2.12: {@code commitJob} takes `scala.collection.Seq`.
 */
public class LeaseCommitProtocol extends SQLHadoopMapReduceCommitProtocol {
  private static final long serialVersionUID = 1L;

  private final String outputPath;

  public LeaseCommitProtocol(String jobId, String path, boolean dynamicPartitionOverwrite) {
    super(jobId, path, dynamicPartitionOverwrite);
    this.outputPath = path;
  }

  public LeaseCommitProtocol(String jobId, String path) {
    this(jobId, path, false);
  }

  @Override
  public void setupJob(JobContext jobContext) {
    LeaseCommits.prepare(jobContext);
    super.setupJob(jobContext);
  }

  @Override
  public void commitJob(
      JobContext jobContext, scala.collection.Seq<FileCommitProtocol.TaskCommitMessage> taskCommits) {
    LeaseCommits.beforeCommit(outputPath);
    try {
      super.commitJob(jobContext, taskCommits);
    } finally {
      LeaseCommits.cleanup(jobContext, outputPath);
    }
  }

  @Override
  public void abortJob(JobContext jobContext) {
    try {
      super.abortJob(jobContext);
    } finally {
      LeaseCommits.cleanup(jobContext, outputPath);
    }
  }
}
