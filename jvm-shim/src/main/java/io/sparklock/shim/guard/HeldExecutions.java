package io.sparklock.shim.guard;

import io.sparklock.shim.wire.Facts;
import io.sparklock.shim.wire.Messages;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.execution.SQLExecution;

/**
 * The executions of this JVM that hold (or are acquiring) locks, by execution id: the one place
 * that knows which handles are live, so that an execution is acquired once, a nested execution
 * names its enclosing handles, and the fence tags of released handles can be dropped.
 */
final class HeldExecutions {
  private HeldExecutions() {}

  /** Executions holding (or acquiring) locks on this JVM, by execution id. */
  private static final Map<String, Held> HELD = new ConcurrentHashMap<>();

  /** One execution's acquisition. */
  static final class Held {
    final String executionId;
    final String rootExecutionId;
    volatile String handle = "";
    /** Whether to re-list the read files after the grant (Python's answer, from its config). */
    volatile boolean refreshListing = true;
    /** The facts sent, and the write epochs of what they read (FileListings compares them). */
    volatile Facts facts;

    volatile Messages.ReadEpochs readEpochs;
    final AtomicBoolean released = new AtomicBoolean(false);
    /** For the metrics and events ({@link LockTelemetry}): the grant, as Python answered it. */
    volatile SparkContext sc;
    volatile int lockCount;
    volatile long waitedNs = -1; // -1: no call into Python was made
    volatile long grantedAtNanos;
    /**
     * Taken while Spark optimized the execution ({@link PlanningLocks}), before its scans were
     * built: the execution's lock node claims it (runs and releases it) instead of acquiring.
     */
    volatile boolean whilePlanning;

    final AtomicBoolean claimed = new AtomicBoolean(false);
    /** The early acquisition's refusal: the execution's later planning attempts fail with it. */
    volatile RuntimeException refusal;

    /**
     * Held until the root execution ends, not its own: an RDD path of a nested execution whose
     * root goes on to commit what it wrote (a micro-batch's Delta sink commits after the nested
     * execution that wrote its files).
     */
    volatile boolean untilRootEnds;

    Held(String executionId, String rootExecutionId) {
      this.executionId = executionId;
      this.rootExecutionId = rootExecutionId;
    }

    /** Whether this acquisition holds a handle not yet released. */
    boolean live() {
      return handle != null && !handle.isEmpty() && !released.get();
    }

    /** The execution id as the metrics and events carry it (null outside an execution). */
    Long executionIdOrNull() {
      long id = parse(executionId);
      return id == Long.MAX_VALUE ? null : id;
    }
  }

  /**
   * Registers {@code held} for its execution; false when the execution is already registered
   * (it holds its locks, so the caller just runs). Outside an execution nothing is registered.
   */
  static boolean register(Held held) {
    return held.executionId == null || HELD.putIfAbsent(held.executionId, held) == null;
  }

  /** What the execution has registered, or null. */
  static Held get(String executionId) {
    return executionId == null ? null : HELD.get(executionId);
  }

  /**
   * The locks the execution took while it was planned, for its lock node to run and release
   * (once: a second node of the same execution just runs); null when there are none to claim.
   */
  static Held claimPlanned(String executionId) {
    Held h = get(executionId);
    if (h == null || !h.whilePlanning || !h.claimed.compareAndSet(false, true)) {
      return null;
    }
    if (h.refusal != null) {
      throw h.refusal;
    }
    return h;
  }

  /** Forgets {@code held} (only itself: a later execution with the same id stays). */
  static void unregister(Held held) {
    if (held.executionId != null) {
      HELD.remove(held.executionId, held);
    }
  }

  /**
   * Removes and returns what the execution still has registered and must release at its end,
   * or null. What is held until its root ends stays while that root still runs.
   */
  static Held take(long executionId) {
    String id = Long.toString(executionId);
    Held h = HELD.get(id);
    if (h != null && h.untilRootEnds && running(h.rootExecutionId)) {
      return null;
    }
    return h != null && HELD.remove(id, h) ? h : null;
  }

  /** Removes and returns the acquisitions held until {@code rootExecutionId} ends. */
  static List<Held> takeUntilRootEnds(long rootExecutionId) {
    String root = Long.toString(rootExecutionId);
    List<Held> out = new ArrayList<>();
    for (Held h : HELD.values()) {
      if (h.untilRootEnds && root.equals(h.rootExecutionId) && HELD.remove(h.executionId, h)) {
        out.add(h);
      }
    }
    return out;
  }

  /** Whether the execution still runs (Spark forgets its QueryExecution when it ends). */
  private static boolean running(String executionId) {
    long id = parse(executionId);
    return id != Long.MAX_VALUE && SQLExecution.getQueryExecution(id) != null;
  }

  /** The handles of every live acquisition (their fence tags must stay). */
  static List<String> liveHandles() {
    List<String> out = new ArrayList<>();
    for (Held h : HELD.values()) {
      if (h.live()) {
        out.add(h.handle);
      }
    }
    return out;
  }

  /**
   * Handles the enclosing statements hold, outermost first: the CALL running its procedure on
   * this thread ({@code analysing}, may be null), then the enclosing executions of the same root.
   */
  static List<String> enclosingHandles(Held me, Held analysing) {
    List<String> out = new ArrayList<>();
    if (analysing != null && analysing != me && !analysing.handle.isEmpty()
        && !analysing.released.get()) {
      out.add(analysing.handle);
    }
    if (me.rootExecutionId == null || me.rootExecutionId.equals(me.executionId)) {
      return out;
    }
    List<Held> same = new ArrayList<>();
    for (Held h : HELD.values()) {
      if (h != me && me.rootExecutionId.equals(h.rootExecutionId) && h.live()) {
        same.add(h);
      }
    }
    same.sort((a, b) -> Long.compare(parse(a.executionId), parse(b.executionId)));
    for (Held h : same) {
      out.add(h.handle);
    }
    return out;
  }

  private static long parse(String id) {
    try {
      return Long.parseLong(id);
    } catch (NumberFormatException | NullPointerException e) {
      return Long.MAX_VALUE;
    }
  }
}
