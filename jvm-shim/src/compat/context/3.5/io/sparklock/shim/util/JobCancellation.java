package io.sparklock.shim.util;

import org.apache.spark.SparkContext;

/**
 * Cancelling the jobs of a job tag: Spark 3.5's {@code SparkContext.cancelJobsWithTag(tag)} takes
 * no reason (4.0 added one), so the jobs fail as cancelled without {@code reason}'s text; the
 * statement still fails with it, from the release.
 */
public final class JobCancellation {
  private JobCancellation() {}

  public static void cancelJobsWithTag(SparkContext sc, String tag, String reason) {
    sc.cancelJobsWithTag(tag);
  }
}
