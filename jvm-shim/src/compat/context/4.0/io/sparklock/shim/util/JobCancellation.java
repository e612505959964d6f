package io.sparklock.shim.util;

import org.apache.spark.SparkContext;

/**
 * Cancelling the jobs of a job tag with a reason the jobs fail with (Spark 4.0+; 3.5's
 * {@code cancelJobsWithTag} takes the tag only).
 */
public final class JobCancellation {
  private JobCancellation() {}

  public static void cancelJobsWithTag(SparkContext sc, String tag, String reason) {
    sc.cancelJobsWithTag(tag, reason);
  }
}
