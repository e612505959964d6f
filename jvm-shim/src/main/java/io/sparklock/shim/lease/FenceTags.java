package io.sparklock.shim.lease;

/**
 * Fencing: the job tag a thread carries while its statement holds a handle, so that Python can
 * cancel every job run under locks it has lost ({@code SparkLockBridge.cancelFencedJobs}) and an
 * expired lease can cancel them itself ({@link Lease}).
 */
public final class FenceTags {
  private static final String FENCE_PREFIX = "sparklock-";

  private FenceTags() {}

  /** The job tag of the jobs run while {@code handle} holds (Python asks cancelFencedJobs). */
  public static String of(String handle) {
    return FENCE_PREFIX + handle.replace(',', '_');
  }

  /** Whether a job tag is a fence (of any handle). */
  public static boolean isFence(String tag) {
    return tag.startsWith(FENCE_PREFIX);
  }
}
