package io.sparklock.shim;

import java.util.HashSet;
import java.util.Set;
import org.apache.spark.SparkContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fencing: the job tag a thread carries while its statement holds a handle, so that Python can
 * cancel every job run under locks it has lost ({@link SparkLockBridge#cancelFencedJobs}).
 */
final class FenceTags {
  private static final Logger LOG = LoggerFactory.getLogger("io.sparklock.shim.LockGuard");

  private static final String FENCE_PREFIX = "sparklock-";

  private FenceTags() {}

  /** The job tag of the jobs run while {@code handle} holds (Python asks cancelFencedJobs). */
  static String of(String handle) {
    return FENCE_PREFIX + handle.replace(',', '_');
  }

  /** Tags this thread with {@code handle}'s fence, after dropping the fences of dead handles. */
  static void add(SparkContext sc, String handle) {
    dropStale(sc);
    sc.addJobTag(of(handle));
  }

  /** Untags this thread (a failure only logged: the tag is dropped as stale later). */
  static void remove(SparkContext sc, String tag) {
    if (tag != null) {
      try {
        sc.removeJobTag(tag);
      } catch (RuntimeException e) {
        LOG.debug("sparklock: removing job tag {} failed: {}", tag, e.toString());
      }
    }
  }

  /**
   * Removes from this thread the fence tags of handles no longer held. An RDD path tags the
   * thread that submits its jobs and cannot untag it (its release runs on the listener thread),
   * so a thread that runs such actions carries at most one stale tag, dropped here.
   */
  private static void dropStale(SparkContext sc) {
    Set<String> live = new HashSet<>();
    for (String handle : HeldExecutions.liveHandles()) {
      live.add(of(handle));
    }
    for (String t : ScalaInterop.list(sc.getJobTags())) {
      if (t.startsWith(FENCE_PREFIX) && !live.contains(t)) {
        sc.removeJobTag(t);
      }
    }
  }
}
