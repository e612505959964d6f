package io.sparklock.shim.guard;

import io.sparklock.shim.bridge.PythonCalls;
import io.sparklock.shim.facts.FactsExtractor;
import io.sparklock.shim.guard.HeldExecutions.Held;
import io.sparklock.shim.lease.Lease;
import io.sparklock.shim.listing.FileListings;
import io.sparklock.shim.server.ServerSessions;
import io.sparklock.shim.telemetry.LockTelemetry;
import io.sparklock.shim.telemetry.StatementHooks;
import io.sparklock.shim.util.ScalaInterop;
import io.sparklock.shim.wire.Facts;
import io.sparklock.shim.wire.Messages;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.SQLExecution;
import org.apache.spark.sql.execution.SparkPlan;

/**
 * The acquire side of a statement: its context, its facts, the call into Python and what the
 * grant says, done once per execution whichever path (synchronous action, RDD path, CALL) asks.
 */
final class LockAcquire {
  private LockAcquire() {}

  /** The context of the running action. */
  static final class Context {
    String executionId;
    String rootExecutionId;
    QueryExecution qe;
    SparkSession session;
  }

  static Context context(SparkPlan node) {
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

  /**
   * Registers the execution and acquires its locks; null when the execution already holds them
   * (the caller just runs). Locks the execution took while it was optimized are returned
   * instead, once, for this caller to run and release. Outside an execution (an internal
   * caller) nothing is registered and the locks are taken around the call itself. A failed
   * acquire leaves nothing registered.
   */
  static Held acquireOnce(Context c, GuardedNode node) {
    Held held = c.executionId == null
        ? new Held(null, null)
        : new Held(c.executionId, c.rootExecutionId);
    if (!HeldExecutions.register(held)) {
      // Taken while the plan was optimized (before its scans were built): run those.
      Held planned = HeldExecutions.claimPlanned(c.executionId);
      if (planned != null) {
        node.recordLockWait(planned.waitedNs, planned.executionId);
      }
      return planned;
    }
    try {
      acquire(node.sparkContext(), node, held, facts(c, node, held));
    } catch (Throwable e) {
      HeldExecutions.unregister(held);
      throw e;
    }
    return held;
  }

  /**
   * {@code body}, preceded by what must happen once the locks are granted and before any job
   * runs: the files the statement reads are listed again (see {@link FileListings}).
   */
  static <T> Supplier<T> afterGrant(Context c, GuardedNode node, Held held, Supplier<T> body) {
    // Also with an empty handle: a nested execution (ANALYZE's count, CTAS's insert) whose
    // enclosing execution already holds every lock it needs still reads a listing of its own.
    return () -> {
      if (held.refreshListing) {
        long start = StatementHooks.now();
        FileListings.refreshAfterGrant(readPlan(c, node), c.session, held.facts, held.readEpochs);
        StatementHooks.afterGrant(start);
      }
      return body.get();
    };
  }

  /** The plan whose relations the execution's scans were planned from. */
  private static LogicalPlan readPlan(Context c, GuardedNode node) {
    return c.qe != null ? c.qe.optimizedPlan() : firstLogicalLink(node.child());
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
  static void acquire(SparkContext sc, GuardedNode node, Held held, Facts facts) {
    if (facts.namesNothing()) {
      if (PythonCalls.callback() == null) {
        throw PythonCalls.notAttached();
      }
      held.handle = "";
      return;
    }
    held.sc = sc;
    long jsonStart = StatementHooks.now();
    String json = FactsExtractor.toJson(facts);
    StatementHooks.factsExtracted(jsonStart);
    long start = System.nanoTime();
    Messages.Acquired granted;
    LockTelemetry.waitStarted();
    try {
      granted = PythonCalls.acquire(json);
    } catch (Throwable e) {
      long waited = System.nanoTime() - start;
      if (node != null) {
        node.recordLockWait(waited, held.executionId); // the SQL tab shows a refused wait too
      }
      LockTelemetry.refused(sc, held.executionIdOrNull(), facts.sql(), e, waited);
      throw e;
    } finally {
      LockTelemetry.waitEnded();
    }
    held.grantedAtNanos = System.nanoTime();
    StatementHooks.acquired(held.grantedAtNanos - start);
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
      LockTelemetry.granted(sc, held.executionIdOrNull(), held.handle, facts.sql(),
          held.lockCount, held.waitedNs, true);
    }
  }

  private static Facts facts(Context c, GuardedNode node, Held held) {
    long start = StatementHooks.now();
    try {
      return extractFacts(c, node, held);
    } finally {
      StatementHooks.factsExtracted(start);
    }
  }

  /**
   * The facts of an execution being optimized: its analysed plan stands for the optimized one,
   * which does not exist yet (so reads of catalog-partitioned file tables are not pruned).
   */
  static Facts planningFacts(QueryExecution qe, SparkContext sc, Held held) {
    LogicalPlan analyzed = qe.analyzed();
    String sql = FactsExtractor.sqlText(qe.logical());
    if (sql == null) {
      sql = FactsExtractor.sqlText(analyzed);
    }
    if (sql == null) {
      sql = sc.getLocalProperty("spark.job.description");
    }
    Facts facts = FactsExtractor.checkedFacts(
        qe.sparkSession(), analyzed, analyzed, held.executionId, held.rootExecutionId, sql,
        HeldExecutions.enclosingHandles(held, AnalysisTimeLocks.current()));
    return withCaller(facts, qe.sparkSession(), sc);
  }

  private static Facts extractFacts(Context c, GuardedNode node, Held held) {
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
        HeldExecutions.enclosingHandles(held, AnalysisTimeLocks.current()));
    return withCaller(facts, c.session, node.sparkContext());
  }

  /** {@code facts} with who runs them and what a cancellation of their thread names. */
  static Facts withCaller(Facts facts, SparkSession session, SparkContext sc) {
    // What a cancellation names (BRIDGE.md): the job group and job tags of the action's thread.
    List<String> tags = ScalaInterop.list(sc.getJobTags());
    tags.sort(null);
    // ... and who runs it: a Thrift/Connect server session's user and client, else the Spark user.
    return facts.withCaller(sc.getLocalProperty("spark.jobGroup.id"), tags,
        ServerSessions.identify(session, sc));
  }
}
