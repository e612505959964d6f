package io.sparklock.shim.lease;

import io.sparklock.shim.bridge.PythonCalls;
import io.sparklock.shim.util.JobCancellation;
import io.sparklock.shim.wire.ErrorCondition;
import io.sparklock.shim.wire.Messages;
import io.sparklock.shim.wire.SparkLockException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.apache.spark.SparkContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The self-fencing lease of this JVM's ZooKeeper and metastore locks (docs/fencing.md).
 *
 * <p>Python pushes renewals ({@link #renew}): per <i>epoch</i> (the ZooKeeper session id, or for
 * the metastore manager a negative term id per granted statement) the monotonic instant
 * ({@code System.nanoTime()}, CLOCK_MONOTONIC as Python's {@code time.monotonic_ns()}) until
 * which its locks are certainly held: the send time of the last answered request plus the
 * timeout minus the margin. A statement granted under an epoch ({@link #bind}) is covered until
 * that deadline; Python only pushes, the JVM acts: a stalled Python or a partition lets the lease
 * lapse and the watchdog cancels the statement's jobs, its commits are refused
 * ({@link #checkCommit}) and its release fails with {@code LOCKS_LOST}. Statements with no epoch
 * (the embedded manager) can only be revoked, by an UNLOCK.
 */
public final class Lease {
  private static final Logger LOG = LoggerFactory.getLogger("io.sparklock.shim.Lease");

  private Lease() {}

  /**
   * Each epoch's deadline. A process may hold several sessions at once (ZooKeeper clients of
   * other quorums, timeouts or credentials); a session that ended is simply no longer renewed,
   * so its deadline passes before the server's expiry.
   */
  private static final Map<Long, Long> DEADLINES = new ConcurrentHashMap<>();

  /** Deadlines further back than this are forgotten (their statements were fenced long ago). */
  private static final long FORGET_NANOS = 600_000_000_000L;

  /** One granted statement under a lease. */
  static final class Bound {
    final SparkContext sc;
    final String handle;
    /** The lease's epoch; null: locks that cannot lapse (revoked only, by an UNLOCK). */
    final Long epoch;
    /** Why it was fenced (null while covered), and when ({@code System.nanoTime()}). */
    volatile String fenced;

    /** Whether a commit of the statement passed its check (an UNLOCK then no longer fences). */
    boolean committed;

    volatile long fencedAtNanos;

    Bound(SparkContext sc, String handle, Long epoch) {
      this.sc = sc;
      this.handle = handle;
      this.epoch = epoch;
    }
  }

  private static final Map<String, Bound> BOUND = new ConcurrentHashMap<>();

  /** The handles the current thread runs under (nested statements: innermost last). */
  private static final ThreadLocal<Deque<Bound>> RUNNING = ThreadLocal.withInitial(ArrayDeque::new);

  /** Fence instants of this JVM, for the nemesis tests' measurements. */
  private static final List<String> FENCES = new ArrayList<>();

  private static final Object WAKE = new Object();
  private static Thread watchdog;

  /**
   * Python: the session {@code epoch}'s locks are held until {@code deadlineNanos} (a deadline
   * only moves forward).
   */
  public static void renew(long epoch, long deadlineNanos) {
    synchronized (WAKE) {
      Long old = DEADLINES.get(epoch);
      if (old != null && old >= deadlineNanos) {
        return;
      }
      DEADLINES.put(epoch, deadlineNanos);
      long now = System.nanoTime();
      DEADLINES.values().removeIf(d -> now - d > FORGET_NANOS);
      WAKE.notifyAll();
    }
  }

  /** The deadline ({@code System.nanoTime()} scale) of {@code epoch}, or MIN_VALUE. */
  public static long deadline(long epoch) {
    return DEADLINES.getOrDefault(epoch, Long.MIN_VALUE);
  }

  /**
   * A statement was granted locks that hold only under the lease {@code epoch} (null: locks
   * that cannot lapse: nothing to do). {@code untilNanos}: the deadline Python knew at the grant.
   */
  public static void bind(SparkContext sc, String handle, Long epoch, Long untilNanos) {
    if (handle == null || handle.isEmpty()) {
      return;
    }
    FencedJobs.register(sc);
    // Locks that cannot lapse are bound too: an UNLOCK may still revoke them.
    BOUND.put(handle, new Bound(sc, handle, epoch));
    if (epoch == null) {
      return;
    }
    if (untilNanos != null) {
      renew(epoch, untilNanos);
    }
    startWatchdog();
    synchronized (WAKE) {
      WAKE.notifyAll(); // the watchdog sleeps until this statement's deadline at the latest
    }
  }

  /**
   * The statement released its locks. Throws {@code LOCKS_LOST} when its lease lapsed while it
   * held them (even if Python, stalled meanwhile, released them without noticing): its work ran
   * unprotected from then on.
   */
  public static void unbind(String handle, boolean quietly) {
    Bound b = handle == null ? null : BOUND.remove(handle);
    if (b != null) {
      FencedJobs.forget(handle);
      ExecutionLeases.unbind(handle);
    }
    if (b == null || quietly) {
      return;
    }
    String reason = b.fenced != null ? b.fenced : lapse(b);
    if (reason != null) {
      throw lost(reason);
    }
  }

  /**
   * A fenced statement does not wait for Python's release (Python may be stalled, or retrying
   * against an unreachable ZooKeeper until it presumes the session expired): the release goes on
   * in the background and the statement fails with {@code LOCKS_LOST} now. No-op otherwise.
   */
  public static void releaseFenced(String handle, java.util.concurrent.ExecutorService releaser) {
    Bound b = handle == null ? null : BOUND.get(handle);
    if (b == null || b.fenced == null) {
      return;
    }
    releaser.submit(() -> {
      try {
        PythonCalls.release(handle);
      } catch (RuntimeException e) {
        LOG.warn("sparklock: releasing fenced {} failed: {}", handle, e.getMessage());
      }
    });
    unbind(handle, false);
  }

  /**
   * Runs a statement's body with its handle marked as the current thread's, so that a commit
   * made on this thread is checked against its lease; refuses to start under a lapsed lease.
   */
  public static <T> T within(String handle, Supplier<T> body) {
    Bound b = handle == null ? null : BOUND.get(handle);
    if (b == null) {
      return body.get();
    }
    Deque<Bound> running = RUNNING.get();
    running.addLast(b);
    try {
      check("starting the statement", false);
      return body.get();
    } finally {
      running.removeLastOccurrence(b);
    }
  }

  /** Whether a statement the current thread runs is bound: a step of it can be refused. */
  public static boolean checksCurrentThread() {
    return !ExecutionLeases.underCurrentThread(RUNNING.get(), BOUND).isEmpty();
  }

  /**
   * Before a write becomes visible (a job commit, see {@code LeaseCommitProtocol}): every lease
   * the current thread runs under must still hold, or the commit is refused with {@code
   * LOCKS_LOST} and the statement fenced.
   */
  public static void checkCommit(String what) {
    check(what, true);
  }

  /**
   * Before a destructive step that is not a commit (an overwrite's delete, each step of a job
   * commit): refused as {@link #checkCommit} is; passing it is not committing (UNLOCK fences).
   */
  public static void checkStep(String what) {
    check(what, false);
  }

  private static void check(String what, boolean commit) {
    for (Bound b : ExecutionLeases.underCurrentThread(RUNNING.get(), BOUND)) {
      synchronized (b) { // against a revocation deciding meanwhile whether it committed
        String reason = b.fenced != null ? b.fenced : lapse(b);
        if (reason != null) {
          fence(b, reason);
          throw lost(reason + "; refused " + what);
        }
        b.committed |= commit;
      }
    }
  }

  /**
   * Someone else removed {@code handle}'s locks (an UNLOCK: Hive's rule frees the object): the
   * statement is fenced, as if its lease lapsed, unless a commit of it already passed its check.
   * Answers {@code "fenced"}, {@code "committed"} (left running: its write is out) or
   * {@code "unknown"} (no statement of this JVM holds {@code handle}).
   */
  public static String revoke(String handle, String reason) {
    Bound b = handle == null ? null : BOUND.get(handle);
    if (b == null) {
      return "unknown";
    }
    synchronized (b) {
      if (b.committed && b.fenced == null) {
        return "committed";
      }
      fence(b, reason);
      return "fenced";
    }
  }

  /**
   * Python found {@code handle}'s locks lost (its session ended, the metastore dropped its
   * request, another client removed its lock): the statement is fenced at once, whatever the
   * deadline last pushed says, so a commit after this instant is refused and jobs it starts
   * later are cancelled. Jobs tagged for a handle this JVM does not hold are cancelled only.
   */
  public static void lost(SparkContext sc, String handle, String reason) {
    Bound b = handle == null ? null : BOUND.get(handle);
    if (b == null) {
      JobCancellation.cancelJobsWithTag(sc, FenceTags.of(handle), reason);
      return;
    }
    fence(b, reason);
  }

  /** Why {@code b}'s lease no longer holds, or null while it does. */
  private static String lapse(Bound b) {
    if (b.epoch == null) {
      return null;
    }
    Long deadline = DEADLINES.get(b.epoch);
    String locks = b.epoch < 0 ? "metastore locks" : "ZooKeeper locks";
    if (deadline == null) {
      return "no lease is known for the " + locks + " it was granted";
    }
    long late = System.nanoTime() - deadline;
    if (late >= 0) {
      String heard = b.epoch < 0 ? "no heartbeat answered by the metastore"
          : "no answer from ZooKeeper";
      return String.format("the lease of its %s lapsed %.0f ms ago (%s reached the lock "
          + "service in time)", locks, late / 1e6, heard);
    }
    return null;
  }

  /**
   * {@code LOCKS_LOST} of a statement that had completed (every commit it made passed its check)
   * when its locks were found lost, at its release: what it wrote is committed, and running it
   * again would write it twice. Carries the message parameter {@code committed=true}
   * ({@code LocksLostError.committed} in Python); other LOCKS_LOST errors do not.
   */
  public static SparkLockException afterCompletion(SparkLockException lost) {
    String message = lost.getMessage()
        + " (after the statement had completed: what it wrote is committed; do not run it again)";
    return new SparkLockException(message,
        new Messages.Failure(ErrorCondition.LOCKS_LOST.name(), Map.of(COMMITTED, "true")));
  }

  /** The message parameter of {@link #afterCompletion}. */
  public static final String COMMITTED = "committed";

  private static SparkLockException lost(String reason) {
    return new SparkLockException(ErrorCondition.LOCKS_LOST, reason);
  }

  /**
   * Fence once: mark, then cancel the jobs that carry the statement's fence tag; jobs it starts
   * later are cancelled as they start ({@link FencedJobs}).
   */
  private static void fence(Bound b, String reason) {
    synchronized (b) {
      if (b.fenced != null) {
        return;
      }
      b.fencedAtNanos = System.nanoTime();
      b.fenced = reason;
    }
    FencedJobs.fenced(b.handle, reason);
    synchronized (FENCES) {
      FENCES.add(b.handle + " " + b.fencedAtNanos);
    }
    LOG.error("sparklock: fencing {}: {}", b.handle, reason);
    try {
      JobCancellation.cancelJobsWithTag(b.sc, FenceTags.of(b.handle),
          "LOCKS_LOST: " + reason);
    } catch (RuntimeException e) {
      LOG.warn("sparklock: cancelling the jobs of {} failed: {}", b.handle, e.toString());
    }
  }

  /** Tests: {@code "<handle> <nanoTime>"} of every fence so far. */
  public static String fences() {
    synchronized (FENCES) {
      return String.join("\n", FENCES);
    }
  }

  /** Tests: an Error the watchdog throws in its next round (null: none). */
  private static volatile String injectedError;

  /** Starts the watchdog, or a new one if the last died (nothing should kill it, see watch). */
  private static synchronized void startWatchdog() {
    if (watchdog != null && watchdog.isAlive()) {
      return;
    }
    watchdog = new Thread(Lease::watch, "sparklock-lease-watchdog");
    watchdog.setDaemon(true);
    watchdog.start();
  }

  /** Sleeps until the earliest deadline of a bound statement, fences what lapsed, repeats. */
  private static void watch() {
    while (true) {
      try {
        String injected = injectedError;
        if (injected != null) {
          injectedError = null;
          throw new Error(injected);
        }
        long wait = Long.MAX_VALUE;
        for (Bound b : BOUND.values()) {
          if (b.fenced != null || b.epoch == null) {
            continue;
          }
          String reason = lapse(b);
          if (reason != null) {
            fence(b, reason);
          } else {
            wait = Math.min(wait, deadline(b.epoch) - System.nanoTime());
          }
        }
        synchronized (WAKE) {
          // A renewal or a new statement wakes it; at most 1 s between looks otherwise.
          long millis = wait >= 1_000_000_000L ? 1000 : Math.max(1, wait / 1_000_000 + 1);
          WAKE.wait(millis);
        }
      } catch (InterruptedException e) {
        return;
      } catch (Throwable e) {
        // An Error too (a StackOverflowError, an OutOfMemoryError that freed its memory when
        // unwinding): a dead watchdog would leave every lapsed lease unfenced.
        LOG.error("sparklock: lease watchdog (it goes on): {}", e.toString(), e);
        if (!pause()) {
          return;
        }
      }
    }
  }

  /** After an error, a short pause so that a persistent one does not spin; false: interrupted. */
  private static boolean pause() {
    try {
      Thread.sleep(50);
      return true;
    } catch (InterruptedException e) {
      return false;
    }
  }

  /** Tests: the watchdog throws {@code Error(message)} in its next round, and must survive it. */
  public static void injectWatchdogError(String message) {
    injectedError = message;
    synchronized (WAKE) {
      WAKE.notifyAll();
    }
  }

  /** Tests: whether the watchdog thread runs (false before the first bound statement). */
  public static boolean watchdogAlive() {
    Thread t = watchdog;
    return t != null && t.isAlive();
  }
}
