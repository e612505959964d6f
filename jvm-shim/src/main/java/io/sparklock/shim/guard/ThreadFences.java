package io.sparklock.shim.guard;

import io.sparklock.shim.lease.FenceTags;
import io.sparklock.shim.util.ScalaInterop;
import java.util.HashSet;
import java.util.Set;
import org.apache.spark.SparkContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The fence tag ({@link FenceTags}) on the action's thread while its statement holds a handle. */
final class ThreadFences {
  private static final Logger LOG = LoggerFactory.getLogger("io.sparklock.shim.LockGuard");

  private ThreadFences() {}

  /** Tags this thread with {@code handle}'s fence, after dropping the fences of dead handles. */
  static void add(SparkContext sc, String handle) {
    dropStale(sc);
    sc.addJobTag(FenceTags.of(handle));
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
      live.add(FenceTags.of(handle));
    }
    for (String t : ScalaInterop.list(sc.getJobTags())) {
      if (FenceTags.isFence(t) && !live.contains(t)) {
        sc.removeJobTag(t);
      }
    }
  }
}
