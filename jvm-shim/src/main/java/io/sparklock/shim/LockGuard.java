package io.sparklock.shim;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.SQLExecution;
import org.apache.spark.sql.execution.SparkPlan;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Acquire → run → release around one execution, with these rules:
 *
 * <ul>
 *   <li><b>One acquisition per execution id.</b> The first {@link SparkLockExec} entered for an
 *       execution id ({@code spark.sql.execution.id}) acquires; any other wrapper entered while
 *       that execution still holds (a subquery plan wrapped when AQE is off, a cached plan's root
 *       computed inside the action, a re-entry through the same plan) just runs. The facts come
 *       from the execution's own {@code QueryExecution}, so they already cover its subqueries.
 *   <li><b>Nested executions lock their own facts.</b> A command that starts statements of its
 *       own (saveAsTable → CTAS → insert) gives them new execution ids that share
 *       {@code spark.sql.execution.root.id}. They are acquired like any other execution (their
 *       facts say what they really write, e.g. the insert's partitions), with
 *       {@code "enclosingHandles"} naming the handles the enclosing executions of the same root
 *       already hold on this JVM, so the service can treat them as one owner (a statement must
 *       never wait for its own locks). Skipping them instead would leave the write unprotected
 *       when the outer facts are coarser than the inner ones.
 *   <li><b>Release is synchronous</b>: the action's thread waits for it, in {@code finally},
 *       before {@code collect()} / {@code spark.sql()} returns (the call into Python itself is
 *       made from a {@code sparklock-release} thread, see {@link #releaseOffThread}) -- whatever the body throws: a failed or
 *       cancelled job surfaces as Scala's {@code SparkException}, a <i>checked</i> exception Java
 *       code does not see declared, so every catch here is {@code Throwable}. The query-end listener only releases
 *       what is still open (RDD paths, failures between acquire and run): idempotent safety net.
 *   <li><b>RDD paths</b> ({@code doExecute}: toLocalIterator, Arrow toPandas, foreach) have no
 *       synchronous end: with an execution id the locks are held until the listener sees the
 *       execution end; without one ({@code df.rdd}) the locks are only checked (acquired and
 *       released at once) because nothing would ever release them.
 *   <li><b>Fencing.</b> While a synchronous action holds its locks, its thread carries the job tag
 *       {@link #fenceTag} of the handle, so every job it starts does too (RDD paths: the thread
 *       that runs {@code doExecute} and submits their jobs). If the locks are lost
 *       (ZooKeeper session expired) Python cancels the jobs with that tag at once, and the release
 *       answers {@code LOCKS_LOST}: that error, not the job cancellation, is what the action
 *       throws, and an action whose jobs had already finished fails with it as well.
 *   <li><b>Cancellable waits.</b> The facts carry the thread's job group ({@code jobGroup}) and
 *       job tags ({@code jobTags}) so that a cancellation of them can end a wait in Python (a
 *       waiting statement has no job Spark could cancel).
 * </ul>
 */
public final class LockGuard {
  private static final Logger LOG = LoggerFactory.getLogger("io.sparklock.shim.LockGuard");

  /** Executions holding (or acquiring) locks on this JVM, by execution id. */
  static final Map<String, Held> HELD = new ConcurrentHashMap<>();

  private LockGuard() {}

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

    Held(String executionId, String rootExecutionId) {
      this.executionId = executionId;
      this.rootExecutionId = rootExecutionId;
    }
  }

  /** The context of the running action. */
  private static final class Context {
    String executionId;
    String rootExecutionId;
    QueryExecution qe;
    SparkSession session;
  }

  private static Context context(SparkPlan node) {
    Context c = new Context();
    SparkContext sc = node.sparkContext();
    c.executionId = sc.getLocalProperty(SQLExecution.EXECUTION_ID_KEY());
    c.rootExecutionId = sc.getLocalProperty(SQLExecution.EXECUTION_ROOT_ID_KEY());
    if (c.executionId != null) {
      try {
        c.qe = SQLExecution.getQueryExecution(Long.parseLong(c.executionId));
      } catch (NumberFormatException e) {
        c.qe = null;
      }
    }
    c.session = c.qe != null ? c.qe.sparkSession() : node.session();
    return c;
  }

  /** Runs {@code body} holding the locks of the current execution (synchronous actions). */
  public static <T> T runLocked(SparkLockExec node, Supplier<T> body) {
    Context c = context(node);
    if (!SparkLockBridge.enabled(c.session)) {
      return body.get();
    }
    if (c.executionId == null) {
      // No SQL execution (an internal caller): lock around the call itself.
      Held held = new Held(null, null);
      acquire(node.sparkContext(), node, held, facts(c, node, held));
      return runThenRelease(node.sparkContext(), held, afterGrant(c, node, held, body));
    }
    Held held = new Held(c.executionId, c.rootExecutionId);
    if (HELD.putIfAbsent(c.executionId, held) != null) {
      return body.get(); // this execution already holds its locks
    }
    try {
      acquire(node.sparkContext(), node, held, facts(c, node, held));
    } catch (Throwable e) {
      HELD.remove(c.executionId, held);
      throw e;
    }
    try {
      return runThenRelease(node.sparkContext(), held, afterGrant(c, node, held, body));
    } finally {
      HELD.remove(c.executionId, held);
    }
  }

  /** The statement run during analysis (a CALL) that holds its locks on this thread, if any. */
  private static final ThreadLocal<Held> DURING_ANALYSIS = new ThreadLocal<>();

  /**
   * Runs {@code body} holding the locks of {@code facts} outside any SQL execution: a statement
   * Spark runs while it analyses it (a {@code CALL}'s procedure, see {@code ProcedureCalls}), so
   * there is no execution id and no physical plan. The executions the body starts on this thread
   * (a procedure's own queries) treat these locks as their enclosing statement's.
   */
  static <T> T runDuringAnalysis(SparkSession session, Facts facts, Supplier<T> body) {
    if (!SparkLockBridge.enabled(session)) {
      return body.get();
    }
    SparkContext sc = session.sparkContext();
    Held held = new Held(null, null);
    acquire(sc, null, held, withCaller(facts, session, sc));
    Held outer = DURING_ANALYSIS.get();
    DURING_ANALYSIS.set(held);
    try {
      return runThenRelease(sc, held, body);
    } finally {
      DURING_ANALYSIS.set(outer);
    }
  }

  /** The job tag of the jobs run while {@code handle} holds (Python asks cancelFencedJobs). */
  static String fenceTag(String handle) {
    return FENCE_PREFIX + handle.replace(',', '_');
  }

  private static final String FENCE_PREFIX = "sparklock-";

  private static <T> T runThenRelease(SparkContext sc, Held held, Supplier<T> body) {
    String tag = held.handle == null || held.handle.isEmpty() ? null : fenceTag(held.handle);
    if (tag != null) {
      dropStaleFenceTags(sc);
      sc.addJobTag(tag);
    }
    T result;
    try {
      result = Lease.within(held.handle, body);
    } catch (Throwable e) {
      removeTag(sc, tag);
      try {
        release(held);
      } catch (SparkLockException releaseFailure) {
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
    removeTag(sc, tag);
    release(held); // UNLOCK_FAILED / LOCKS_LOST here fail the action: the caller must know
    return result;
  }

  private static void removeTag(SparkContext sc, String tag) {
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
  private static void dropStaleFenceTags(SparkContext sc) {
    java.util.Set<String> live = new java.util.HashSet<>();
    for (Held h : HELD.values()) {
      if (h.handle != null && !h.handle.isEmpty() && !h.released.get()) {
        live.add(fenceTag(h.handle));
      }
    }
    for (String t : ScalaInterop.list(sc.getJobTags())) {
      if (t.startsWith(FENCE_PREFIX) && !live.contains(t)) {
        sc.removeJobTag(t);
      }
    }
  }

  private static boolean isLocksLost(SparkLockException e) {
    String m = e.getMessage();
    return m != null && m.startsWith("LOCKS_LOST");
  }

  /** RDD paths: acquire now, release when the execution ends (or at once without one). */
  public static void lockUntilExecutionEnd(SparkLockExec node) {
    Context c = context(node);
    if (!SparkLockBridge.enabled(c.session)) {
      return;
    }
    if (c.executionId == null) {
      Held held = new Held(null, null);
      acquire(node.sparkContext(), node, held, facts(c, node, held));
      try {
        afterGrant(c, node, held, () -> null).get();
      } finally {
        release(held);
      }
      return;
    }
    Held held = new Held(c.executionId, c.rootExecutionId);
    if (HELD.putIfAbsent(c.executionId, held) != null) {
      return;
    }
    try {
      acquire(node.sparkContext(), node, held, facts(c, node, held));
    } catch (Throwable e) {
      HELD.remove(c.executionId, held);
      throw e;
    }
    // A failure here leaves the release to the query-end listener (the execution is registered).
    afterGrant(c, node, held, () -> null).get();
    if (!held.handle.isEmpty()) {
      // Fencing: the jobs of an RDD path are submitted from the thread that runs doExecute (the
      // serving thread of toLocalIterator / Arrow, or the action's own thread for foreach).
      SparkContext sc = node.sparkContext();
      dropStaleFenceTags(sc);
      sc.addJobTag(fenceTag(held.handle));
    }
  }

  /**
   * {@code body}, preceded by what must happen once the locks are granted and before any job
   * runs: the files the statement reads are listed again (see {@link FileListings}).
   */
  private static <T> Supplier<T> afterGrant(
      Context c, SparkLockExec node, Held held, Supplier<T> body) {
    // Also with an empty handle: a nested execution (ANALYZE's count, CTAS's insert) whose
    // enclosing execution already holds every lock it needs still reads a listing of its own.
    return () -> {
      if (held.refreshListing) {
        long start = System.nanoTime();
        FileListings.refreshAfterGrant(readPlan(c, node), c.session, held.facts, held.readEpochs);
        StatementTimings.AFTER_GRANT_NANOS.addAndGet(System.nanoTime() - start);
      }
      return body.get();
    };
  }

  /** The plan whose relations the execution's scans were planned from. */
  private static LogicalPlan readPlan(Context c, SparkLockExec node) {
    return c.qe != null ? c.qe.optimizedPlan() : firstLogicalLink(node.child());
  }

  /** Listener: the execution ended; release whatever it still holds. */
  static void onExecutionEnd(long executionId) {
    Held held = HELD.remove(Long.toString(executionId));
    if (held == null) {
      return;
    }
    try {
      release(held);
    } catch (RuntimeException e) {
      LOG.warn("sparklock: releasing the locks of execution {} at its end failed: {}",
          executionId, e.getMessage());
    }
  }

  static void release(Held held) {
    if (held.handle == null || held.handle.isEmpty()) {
      held.released.set(true);
      return;
    }
    if (held.released.compareAndSet(false, true)) {
      String error = null;
      long start = System.nanoTime();
      try {
        Lease.releaseFenced(held.handle, RELEASER); // LOCKS_LOST at once: Python may be stuck
        releaseOffThread(held.handle);
        Lease.unbind(held.handle, false); // LOCKS_LOST: its lease lapsed while it held them
      } catch (RuntimeException e) {
        Lease.unbind(held.handle, true);
        error = String.valueOf(e.getMessage());
        throw e;
      } finally {
        StatementTimings.RELEASES.incrementAndGet();
        StatementTimings.RELEASE_NANOS.addAndGet(System.nanoTime() - start);
        LockTelemetry.released(held.sc, executionIdOf(held), held.handle, held.lockCount,
            System.nanoTime() - held.grantedAtNanos, error);
      }
    }
  }

  private static Long executionIdOf(Held held) {
    long id = parse(held.executionId);
    return id == Long.MAX_VALUE ? null : id;
  }

  /** Threads that call Python's release (daemon, created on demand, reused). */
  private static final ExecutorService RELEASER =
      Executors.newCachedThreadPool(
          r -> {
            Thread t = new Thread(r, "sparklock-release");
            t.setDaemon(true);
            return t;
          });

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
    Future<?> done = RELEASER.submit(() -> SparkLockBridge.release(handle));
    boolean interrupted = false;
    try {
      while (true) {
        try {
          done.get();
          return;
        } catch (InterruptedException e) {
          interrupted = true; // a release must finish: keep waiting, restore the flag after
        } catch (ExecutionException e) {
          Throwable cause = e.getCause();
          if (cause instanceof RuntimeException) {
            throw (RuntimeException) cause;
          }
          if (cause instanceof Error) {
            throw (Error) cause;
          }
          throw new SparkLockException("UNLOCK_FAILED: releasing " + handle + " failed: " + cause,
              cause);
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Handles the enclosing executions of the same root hold, outermost first. */
  static List<String> enclosingHandles(Held me) {
    List<String> out = new ArrayList<>();
    Held analysing = DURING_ANALYSIS.get(); // a CALL running its procedure on this thread
    if (analysing != null && analysing != me && !analysing.handle.isEmpty()
        && !analysing.released.get()) {
      out.add(analysing.handle);
    }
    if (me.rootExecutionId == null || me.rootExecutionId.equals(me.executionId)) {
      return out;
    }
    List<Held> same = new ArrayList<>();
    for (Held h : HELD.values()) {
      if (h != me
          && me.rootExecutionId.equals(h.rootExecutionId)
          && h.handle != null
          && !h.handle.isEmpty()
          && !h.released.get()) {
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

  /** The logical plan of the topmost physical node that links to one (pre-order). */
  static LogicalPlan firstLogicalLink(SparkPlan root) {
    List<SparkPlan> stack = new ArrayList<>();
    stack.add(root);
    while (!stack.isEmpty()) {
      SparkPlan p = stack.remove(0);
      scala.Option<LogicalPlan> link = p.logicalLink();
      if (link.isDefined()) {
        return link.get();
      }
      stack.addAll(ScalaInterop.list(p.children()));
    }
    return null;
  }

  /**
   * Calls Python's acquire (the handle, and whether to re-list the files read), except for facts
   * that name no table, path, database or field ({@code SELECT 1}, {@code range}, {@code SET}):
   * nothing could be locked, so the round trip
   * (~0.1–0.4 ms) is skipped. A missing callback still fails closed. {@code node} is null for a
   * statement run during analysis (a CALL): it has no plan node to show its wait on.
   */
  private static void acquire(SparkContext sc, SparkLockExec node, Held held, Facts facts) {
    if (facts.namesNothing()) {
      if (SparkLockBridge.callback() == null) {
        throw new SparkLockException(SparkLockBridge.NOT_ATTACHED);
      }
      held.handle = "";
      return;
    }
    held.sc = sc;
    long jsonStart = System.nanoTime();
    String json = FactsExtractor.toJson(facts);
    long start = System.nanoTime();
    StatementTimings.FACTS_NANOS.addAndGet(start - jsonStart);
    Messages.Acquired granted;
    LockTelemetry.waitStarted();
    try {
      granted = SparkLockBridge.acquire(json);
    } catch (Throwable e) {
      long waited = System.nanoTime() - start;
      if (node != null) {
        node.recordLockWait(waited, held.executionId); // the SQL tab shows a refused wait too
      }
      LockTelemetry.refused(sc, executionIdOf(held), facts.sql(), e, waited);
      throw e;
    } finally {
      LockTelemetry.waitEnded();
    }
    held.grantedAtNanos = System.nanoTime();
    StatementTimings.ACQUIRES.incrementAndGet();
    StatementTimings.ACQUIRE_NANOS.addAndGet(held.grantedAtNanos - start);
    held.refreshListing = granted.refreshListing();
    held.facts = facts;
    held.readEpochs = granted.readEpochs();
    held.handle = granted.handle() == null ? "" : granted.handle();
    Lease.bind(sc, held.handle, granted.leaseEpoch(), granted.leaseUntilNs());
    held.waitedNs = granted.waitedNs() != null ? granted.waitedNs() : held.grantedAtNanos - start;
    if (node != null) {
      node.recordLockWait(held.waitedNs, held.executionId);
    }
    if (!held.handle.isEmpty()) {
      held.lockCount = granted.lockCount() == null ? 0 : granted.lockCount();
      LockTelemetry.granted(sc, executionIdOf(held), held.handle, facts.sql(), held.lockCount,
          held.waitedNs, true);
    }
  }

  private static Facts facts(Context c, SparkLockExec node, Held held) {
    long start = System.nanoTime();
    try {
      return extractFacts(c, node, held);
    } finally {
      StatementTimings.FACTS_NANOS.addAndGet(System.nanoTime() - start);
    }
  }

  private static Facts extractFacts(Context c, SparkLockExec node, Held held) {
    LogicalPlan analyzed;
    LogicalPlan optimized;
    String sql = null;
    if (c.qe != null) {
      analyzed = c.qe.analyzed();
      optimized = c.qe.optimizedPlan();
      sql = FactsExtractor.sqlText(c.qe.logical());
      if (sql == null) {
        sql = FactsExtractor.sqlText(analyzed);
      }
    } else {
      // No QueryExecution registered: the planner's link to the (optimized) logical plan.
      analyzed = firstLogicalLink(node.child());
      optimized = analyzed;
    }
    if (sql == null) {
      sql = node.sparkContext().getLocalProperty("spark.job.description");
    }
    Facts facts = FactsExtractor.checkedFacts(
        c.session, analyzed, optimized, c.executionId, c.rootExecutionId, sql,
        enclosingHandles(held));
    return withCaller(facts, c.session, node.sparkContext());
  }

  private static Facts withCaller(Facts facts, SparkSession session, SparkContext sc) {
    // What a cancellation names (BRIDGE.md): the job group and job tags of the action's thread.
    List<String> tags = ScalaInterop.list(sc.getJobTags());
    tags.sort(null);
    // ... and who runs it: a Thrift/Connect server session's user and client, else the Spark user.
    return facts.withCaller(sc.getLocalProperty("spark.jobGroup.id"), tags,
        ServerSessions.identify(session, sc));
  }
}
