package io.sparklock.shim;

import org.apache.spark.SparkContext;

/**
 * Cancelling the jobs of a job tag: Spark 3.5's {@code SparkContext.cancelJobsWithTag(tag)} takes
 * no reason (4.0 added one), so the jobs fail as cancelled without {@code reason}'s text; the
 * statement still fails with it, from the release.
 */
final class JobCancellation {
  private JobCancellation() {}

  static void cancelJobsWithTag(SparkContext sc, String tag, String reason) {
    sc.cancelJobsWithTag(tag);
  }
}
