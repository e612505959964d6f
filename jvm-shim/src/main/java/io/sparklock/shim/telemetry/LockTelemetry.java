package io.sparklock.shim.telemetry;

import com.fasterxml.jackson.core.type.TypeReference;
import io.sparklock.shim.wire.Messages;
import java.util.List;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the shim tells Spark about locks: the {@link LockMetrics} figures and the listener events
 * ({@link SparkListenerLockGranted} / {@link SparkListenerLockReleased} /
 * {@link SparkListenerLockRefused}).
 *
 * <p>Counted where the answers already arrive, so the hot path costs no extra py4j round trip:
 * {@link LockGuard} (statements) and {@link LockStatementRunner} ({@code LOCK TABLE}) report
 * grants, refusals and releases from the callback's answers. What only Python sees (a release
 * retried, locks lost, a backend's state such as its connection) arrives in batches through
 * {@link #report} ({@code Messages.Report}, {@code sparklock/messages.py}'s twin).
 */
public final class LockTelemetry {
  private static final Logger LOG = LoggerFactory.getLogger("io.sparklock.shim.LockTelemetry");
  private static final int STATEMENT_CHARS = 500;

  private LockTelemetry() {}

  /** An acquisition starts (it may wait): the {@code waiting} gauge. */
  public static void waitStarted() {
    LockMetrics.current().waiting.incrementAndGet();
  }

  /** An acquisition ended, granted or not. */
  public static void waitEnded() {
    LockMetrics.current().waiting.decrementAndGet();
  }

  /** Locks granted: {@code implicit} ones count as held until {@link #released}. */
  public static void granted(SparkContext sc, Long executionId, String handle, String statement,
      int lockCount, long waitedNs, boolean implicit) {
    LockMetrics m = LockMetrics.current();
    m.acquisitions.inc();
    m.time(m.lockWaitTime, waitedNs);
    if (implicit) {
      m.locksHeld.addAndGet(lockCount);
    }
    post(sc, new SparkListenerLockGranted(System.currentTimeMillis(), executionId, handle,
        abbreviate(statement), lockCount, waitedNs));
  }

  /** An acquisition failed with {@code error} (its text starts with its code). */
  public static void refused(SparkContext sc, Long executionId, String statement, Throwable error,
      long waitedNs) {
    String text = String.valueOf(error.getMessage());
    String code = codeOf(text);
    LockMetrics m = LockMetrics.current();
    if ("LOCK_CONFLICT".equals(code)) {
      m.conflicts.inc();
    } else if ("LOCK_WAIT_CANCELLED".equals(code)) {
      m.cancelledWaits.inc();
    } else if ("LOCK_DEADLOCK".equals(code)) {
      m.deadlocks.inc();
    } else {
      m.failedAcquisitions.inc();
    }
    post(sc, new SparkListenerLockRefused(System.currentTimeMillis(), executionId,
        abbreviate(statement), code, text, waitedNs));
  }

  /** A statement's locks were released ({@code error} null) or its release failed. */
  public static void released(SparkContext sc, Long executionId, String handle, int lockCount,
      long heldNs, String error) {
    LockMetrics m = LockMetrics.current();
    m.locksHeld.addAndGet(-lockCount);
    m.time(m.lockHoldTime, heldNs);
    if (error == null) {
      m.releases.inc();
    }
    post(sc, new SparkListenerLockReleased(System.currentTimeMillis(), executionId, handle,
        lockCount, heldNs, error));
  }

  /**
   * Python's reports (a JSON array of {@code Messages.Report}), sent in batches off the lock
   * path: {@code RELEASE_RETRIED} and {@code LOCKS_LOST} add {@code count};
   * {@code BACKEND_STATE} sets the backend gauge named {@code detail} to {@code count}.
   */
  public static void report(String reportsJson) {
    List<Messages.Report> reports;
    try {
      reports = Messages.JSON.readValue(reportsJson, new TypeReference<List<Messages.Report>>() {});
    } catch (java.io.IOException e) {
      LOG.warn("sparklock: unreadable metrics report {}: {}", Messages.abbreviate(reportsJson),
          e.toString());
      return;
    }
    LockMetrics m = LockMetrics.current();
    for (Messages.Report r : reports) {
      switch (String.valueOf(r.event())) {
        case "RELEASE_RETRIED":
          m.releasesRetried.inc(r.count());
          break;
        case "LOCKS_LOST":
          m.locksLost.inc(r.count());
          break;
        case "BACKEND_STATE":
          if (r.detail() != null && !r.detail().isEmpty()) {
            m.backendState(r.detail(), r.count());
          }
          break;
        default:
          LOG.debug("sparklock: unknown metrics report {}", r);
      }
    }
  }

  /** The code an error text starts with ({@code LOCK_CONFLICT: ...} → {@code LOCK_CONFLICT}). */
  static String codeOf(String text) {
    int colon = text == null ? -1 : text.indexOf(':');
    String head = colon > 0 ? text.substring(0, colon) : "";
    return head.matches("[A-Z][A-Z0-9_]*") ? head : "ERROR";
  }

  private static String abbreviate(String s) {
    return s == null || s.length() <= STATEMENT_CHARS ? s : s.substring(0, STATEMENT_CHARS) + "...";
  }

  private static void post(SparkContext sc, SparkListenerEvent event) {
    if (sc == null) {
      return;
    }
    try {
      sc.listenerBus().post(event);
    } catch (RuntimeException e) {
      LOG.debug("sparklock: posting {} failed: {}", event, e.toString());
    }
  }
}
