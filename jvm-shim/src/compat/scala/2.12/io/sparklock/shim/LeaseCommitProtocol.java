package io.sparklock.shim;

import io.sparklock.shim.lease.LeaseCommitProtocolBase;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.spark.internal.io.FileCommitProtocol;

/**
 * {@code spark.sql.sources.commitProtocolClass} as {@code sparklock.configure} sets it: Spark's
 * own protocol with a staging area per job and the lease checked before the job commit
 * ({@link LeaseCommitProtocolBase}). Scala 2.12: {@code commitJob} takes {@code scala.collection.Seq}.
 */
public class LeaseCommitProtocol extends LeaseCommitProtocolBase {
  private static final long serialVersionUID = 1L;

  public LeaseCommitProtocol(String jobId, String path, boolean dynamicPartitionOverwrite) {
    super(jobId, path, dynamicPartitionOverwrite);
  }

  public LeaseCommitProtocol(String jobId, String path) {
    this(jobId, path, false);
  }

  @Override
  public void commitJob(
      JobContext jobContext, scala.collection.Seq<FileCommitProtocol.TaskCommitMessage> taskCommits) {
    commitChecked(jobContext, () -> super.commitJob(jobContext, taskCommits));
  }
}
