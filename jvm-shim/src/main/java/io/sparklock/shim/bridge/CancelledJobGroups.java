package io.sparklock.shim.bridge;

import java.lang.reflect.Method;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.SparkContext$;
import org.apache.spark.SparkContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ends a lock wait whose job group Spark has cancelled for the future
 * ({@code SparkContext.cancelJobGroupAndFutureJobs(g)}, Spark 4.0+), also when the call comes
 * from JVM code (Scala, a Java library, {@code sc._jsc.sc()}) that no Python hook sees.
 *
 * <p>A statement waiting for its locks has no job yet, so Spark's cancellation finds nothing to
 * cancel; but for {@code cancelJobGroupAndFutureJobs} the DAGScheduler records the group
 * ({@code cancelledJobGroups}) and fails every later job of it. The waiting statement would
 * fail at its first job once granted, so its wait may as well end now: while a statement with a
 * job group waits, one daemon thread polls that record and calls Python's {@code cancelWaits} for
 * the group ({@code LOCK_WAIT_CANCELLED}). A plain {@code cancelJobGroup}, {@code
 * cancelJobsWithTag} or {@code cancelAllJobs} made from JVM code leaves no record: Spark itself
 * lets such a statement's later jobs run, and the wait ends at its budget (BRIDGE.md).
 *
 * <p>The record is Spark's private, not thread-safe {@code LimitedSizeFIFOSet}: it is only read
 * (by reflection: Spark 3.5 has none, and the watch is then off), a read that fails or misses is
 * retried at the next poll.
 */
final class CancelledJobGroups {
  private static final Logger LOG = LoggerFactory.getLogger("io.sparklock.shim.CancelledJobGroups");
  static final long POLL_MILLIS = 200;

  /** Job group → number of waits in it in progress. */
  private static final Map<String, AtomicInteger> WAITING = new ConcurrentHashMap<>();

  private static final Object START = new Object();
  private static Thread poller;

  private CancelledJobGroups() {}

  /** A registration of the calling statement's wait; closing it ends the watch of its group. */
  interface Watch extends AutoCloseable {
    @Override
    void close();
  }

  private static final Watch NONE = () -> {};

  /** Watches the calling thread's job group while the returned {@link Watch} is open. */
  static Watch watchThisThread() {
    SparkContext sc = activeContext();
    String group = sc == null ? null : sc.getLocalProperty("spark.jobGroup.id");
    if (group == null || group.isEmpty() || cancelledGroups(sc) == null) {
      return NONE;
    }
    WAITING.computeIfAbsent(group, g -> new AtomicInteger()).incrementAndGet();
    startPoller();
    return () ->
        WAITING.computeIfPresent(group, (g, n) -> n.decrementAndGet() <= 0 ? null : n);
  }

  private static SparkContext activeContext() {
    try {
      scala.Option<SparkContext> active = SparkContext$.MODULE$.getActive();
      return active.isDefined() ? active.get() : null;
    } catch (RuntimeException | LinkageError e) {
      return null;
    }
  }

  /** The DAGScheduler's record of groups cancelled with their future jobs (null: none). */
  private static Object cancelledGroups(SparkContext sc) {
    try {
      Object scheduler = sc.dagScheduler();
      Method m = scheduler.getClass().getMethod("cancelledJobGroups");
      return m.invoke(scheduler);
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return null; // Spark 3.5: no such record
    }
  }

  private static boolean contains(Object record, String group) {
    try {
      return (Boolean) record.getClass().getMethod("contains", Object.class).invoke(record, group);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return false; // read while Spark's event loop changed it: the next poll reads again
    }
  }

  private static void startPoller() {
    synchronized (START) {
      if (poller != null && poller.isAlive()) {
        return;
      }
      poller = new Thread(CancelledJobGroups::poll, "sparklock-cancelled-groups");
      poller.setDaemon(true);
      poller.start();
    }
  }

  private static void poll() {
    while (true) {
      try {
        Thread.sleep(POLL_MILLIS);
      } catch (InterruptedException e) {
        return;
      }
      if (WAITING.isEmpty()) {
        synchronized (START) {
          if (WAITING.isEmpty()) {
            poller = null;
            return;
          }
        }
        continue;
      }
      SparkContext sc = activeContext();
      Object record = sc == null ? null : cancelledGroups(sc);
      if (record == null) {
        continue;
      }
      for (String group : WAITING.keySet()) {
        if (contains(record, group)) {
          LOG.info("sparklock: job group {} was cancelled with its future jobs: ending its lock "
              + "waits", group);
          PythonNotices.cancelWaitsOfGroup(group,
              "SparkContext.cancelJobGroupAndFutureJobs('" + group + "')");
        }
      }
    }
  }
}
