package io.sparklock.shim.guard;

import io.sparklock.shim.bridge.PythonCalls;
import io.sparklock.shim.guard.HeldExecutions.Held;
import io.sparklock.shim.lease.FenceTags;
import io.sparklock.shim.lease.Lease;
import io.sparklock.shim.telemetry.LockTelemetry;
import io.sparklock.shim.telemetry.StatementHooks;
import io.sparklock.shim.util.AwaitCall;
import io.sparklock.shim.wire.ErrorCondition;
import io.sparklock.shim.wire.SparkLockException;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Supplier;
import org.apache.spark.SparkContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The release side of a statement: run the body fenced and release after it, whatever it threw
 * (synchronous actions, a CALL), or release when the execution ends (the query-end listener's
 * safety net). Release is idempotent: the first caller for a {@link Held} calls Python.
 */
final class LockRelease {
  private static final Logger LOG = LoggerFactory.getLogger("io.sparklock.shim.LockGuard");

  private LockRelease() {}

  /**
   * Runs {@code body} with the thread carrying {@code held}'s fence tag, then releases. A failed
   * or cancelled job surfaces as Scala's {@code SparkException}, a <i>checked</i> exception Java
   * code does not see declared, so every catch here is {@code Throwable}.
   */
  static <T> T runThenRelease(SparkContext sc, Held held, Supplier<T> body) {
    String tag = held.handle == null || held.handle.isEmpty() ? null : FenceTags.of(held.handle);
    if (tag != null) {
      ThreadFences.add(sc, held.handle);
    }
    T result;
    try {
      result = Lease.within(held.handle, body);
    } catch (Throwable e) {
      ThreadFences.remove(sc, tag);
      try {
        release(held);
      } catch (SparkLockException releaseFailure) {
        SparkLockException refused = locksLostIn(e);
        if (refused != null) {
          // A commit refused under the lapsed lease says what it kept from becoming visible.
          refused.addSuppressed(releaseFailure);
          throw refused;
        }
        if (isLocksLost(releaseFailure)) {
          // The jobs were cancelled because the locks were lost: that is the real failure.
          releaseFailure.addSuppressed(e);
          throw releaseFailure;
        }
        e.addSuppressed(releaseFailure);
      } catch (RuntimeException releaseFailure) {
        e.addSuppressed(releaseFailure);
      }
      throw e;
    }
    ThreadFences.remove(sc, tag);
    try {
      release(held); // UNLOCK_FAILED / LOCKS_LOST here fail the action: the caller must know
    } catch (SparkLockException e) {
      // The body completed: its writes are committed, so a retry would repeat them.
      throw isLocksLost(e) ? Lease.afterCompletion(e) : e;
    }
    return result;
  }

  /** The {@code LOCKS_LOST} a commit check threw, wherever the writer wrapped it, or null. */
  private static SparkLockException locksLostIn(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof SparkLockException && isLocksLost((SparkLockException) t)) {
        return (SparkLockException) t;
      }
    }
    return null;
  }

  private static boolean isLocksLost(SparkLockException e) {
    return e.condition() == ErrorCondition.LOCKS_LOST;
  }

  /** Listener: the execution ended; release whatever it still holds. */
  static void onExecutionEnd(long executionId) {
    List<Held> ending = HeldExecutions.takeUntilRootEnds(executionId);
    Held own = HeldExecutions.take(executionId);
    if (own != null) {
      ending.add(own);
    }
    for (Held held : ending) {
      try {
        release(held);
      } catch (RuntimeException e) {
        LOG.warn("sparklock: releasing the locks of execution {} at its end failed: {}",
            held.executionId, e.getMessage());
      }
    }
  }

  /** Releases {@code held} once (later calls return at once); Python's failure is thrown. */
  static void release(Held held) {
    if (held.handle == null || held.handle.isEmpty()) {
      held.released.set(true);
      return;
    }
    if (held.released.compareAndSet(false, true)) {
      String error = null;
      long start = StatementHooks.now();
      try {
        Lease.releaseFenced(held.handle, RELEASER); // LOCKS_LOST at once: Python may be stuck
        releaseOffThread(held.handle);
        Lease.unbind(held.handle, false); // LOCKS_LOST: its lease lapsed while it held them
      } catch (RuntimeException e) {
        Lease.unbind(held.handle, true);
        error = String.valueOf(e.getMessage());
        throw e;
      } finally {
        StatementHooks.released(start);
        LockTelemetry.released(held.sc, held.executionIdOrNull(), held.handle, held.lockCount,
            System.nanoTime() - held.grantedAtNanos, error);
      }
    }
  }

  /** Threads that call Python's release (daemon, created on demand, reused). */
  private static final ExecutorService RELEASER =
      Executors.newCachedThreadPool(AwaitCall.daemon("sparklock-release"));

  /**
   * Calls Python's release from a thread of our own, and waits for it (uninterruptibly).
   *
   * <p>With PySpark's pinned threads (the default) a callback made from the JVM thread that runs
   * a Python thread's action is sent to <i>that</i> Python thread. After Ctrl-C that thread has
   * left its py4j call (KeyboardInterrupt) and reads nothing more until its next call, so a
   * release made on the action thread would wait -- holding every lock -- until then. A thread
   * that no Python thread is paired with calls through py4j's own callback connections instead.
   */
  static void releaseOffThread(String handle) {
    Future<?> done = RELEASER.submit(() -> PythonCalls.release(handle));
    // A release must finish: an interrupt only waits on, and is restored after.
    AwaitCall.await(done, () -> {}, cause ->
        new SparkLockException(ErrorCondition.UNLOCK_FAILED,
            "releasing " + handle + " failed: " + cause, cause));
  }
}
