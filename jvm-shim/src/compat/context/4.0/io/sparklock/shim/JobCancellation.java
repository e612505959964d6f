package io.sparklock.shim;

import org.apache.spark.SparkContext;

/**
 * Cancelling the jobs of a job tag with a reason the jobs fail with (Spark 4.0+; 3.5's
 * {@code cancelJobsWithTag} takes the tag only).
 */
final class JobCancellation {
  private JobCancellation() {}

  static void cancelJobsWithTag(SparkContext sc, String tag, String reason) {
    sc.cancelJobsWithTag(tag, reason);
  }
}
