package io.sparklock.shim.statements;

import io.sparklock.shim.bridge.PythonCalls;
import io.sparklock.shim.facts.FactsExtractor;
import io.sparklock.shim.facts.SessionConf;
import io.sparklock.shim.server.ServerSessions;
import io.sparklock.shim.telemetry.LockTelemetry;
import io.sparklock.shim.util.ClassicSession;
import io.sparklock.shim.util.RecordColumns;
import io.sparklock.shim.util.ScalaInterop;
import io.sparklock.shim.wire.Caller;
import io.sparklock.shim.wire.ErrorCondition;
import io.sparklock.shim.wire.Messages;
import io.sparklock.shim.wire.SparkLockException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Supplier;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.AnalysisException;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.CommandExecutionMode;
import org.apache.spark.sql.execution.QueryExecution;

/**
 * Runs one lock statement: builds its request (one {@link Messages} type per statement, object
 * resolved by {@link LockTargets}), sends it to Python through its own {@link SparkLockBridge}
 * call and turns the answer into the statement's rows. EXPLAIN LOCKS analyses its statement
 * without running it and asks Python which locks it would take.
 */
final class LockStatementRunner {
  private LockStatementRunner() {}

  static List<Row> run(LockStatementCommand statement, SparkSession session) throws Exception {
    switch (statement.kind()) {
      case SHOW_LOCKS:
        return showLocks(statement, session);
      case LOCK:
        lock(session, lockRequest(statement, session));
        return Collections.emptyList();
      case UNLOCK:
        unlock(statement, session);
        return Collections.emptyList();
      case EXPLAIN_LOCKS:
        return explainLocks(statement, session);
      default:
        throw new IllegalStateException(String.valueOf(statement.kind()));
    }
  }

  private static List<Row> showLocks(LockStatementCommand statement, SparkSession session)
      throws AnalysisException {
    var classic = ClassicSession.of(session); // the classic session type differs per Spark line
    Messages.LockTarget object =
        statement.nameParts() == null ? null : LockTargets.resolve(statement, session);
    Messages.ShowLocksRequest request = new Messages.ShowLocksRequest(
        classic.sessionUUID(), SessionConf.sessionConf(classic), object);
    Messages.Locks answer = orDisabledAnswer(session,
        () -> PythonCalls.showLocks(request),
        () -> new Messages.Locks(true, null, null, List.of()));
    return rowsOf(statement, LockStatementCommand.LOCK_ROW, answer.locks());
  }

  /** The request of LOCK TABLE / DATABASE (BRIDGE.md "Lock statement requests"). */
  private static Messages.ExplicitLockRequest lockRequest(LockStatementCommand statement,
      SparkSession session) throws AnalysisException {
    var classic = ClassicSession.of(session);
    SparkContext sc = classic.sparkContext();
    // A LOCK TABLE wait ends on a cancellation of its thread's job group or tags (BRIDGE.md).
    List<String> tags = new ArrayList<>(ScalaInterop.list(sc.getJobTags()));
    tags.sort(null);
    Caller caller = ServerSessions.identify(session, sc); // who owns the lock
    return new Messages.ExplicitLockRequest(
        classic.sessionUUID(),
        SessionConf.sessionConf(classic),
        LockTargets.resolve(statement, session),
        statement.lockMode(),
        statement.sqlText(),
        sc.getLocalProperty("spark.jobGroup.id"),
        tags,
        caller.user(),
        caller.client(),
        caller.agent());
  }

  /** UNLOCK TABLE / DATABASE, with who asks to remove the lock (unlock.policy). */
  private static void unlock(LockStatementCommand statement, SparkSession session)
      throws AnalysisException {
    var classic = ClassicSession.of(session);
    Caller caller = ServerSessions.identify(session, classic.sparkContext());
    Messages.UnlockRequest request = new Messages.UnlockRequest(
        classic.sessionUUID(),
        SessionConf.sessionConf(classic),
        LockTargets.resolve(statement, session),
        caller.user(),
        caller.client(),
        caller.agent());
    orDisabledAnswer(session, () -> PythonCalls.unlock(request), () -> null);
  }

  /**
   * LOCK TABLE, counted as a grant or a refusal of one lock ({@link LockTelemetry}; the wait is
   * the call's duration). Its release (UNLOCK, a closed server session) is not timed here.
   */
  private static void lock(SparkSession session, Messages.ExplicitLockRequest request) {
    if (!isEnabled(session)) {
      orDisabledAnswer(session, () -> PythonCalls.lock(request), () -> null);
      return;
    }
    SparkContext sc = ClassicSession.of(session).sparkContext();
    long start = System.nanoTime();
    LockTelemetry.waitStarted();
    try {
      PythonCalls.lock(request);
    } catch (RuntimeException e) {
      LockTelemetry.refused(sc, null, request.sql(), e, System.nanoTime() - start);
      throw e;
    } finally {
      LockTelemetry.waitEnded();
    }
    LockTelemetry.granted(sc, null, null, request.sql(), 1, System.nanoTime() - start, false);
  }

  private static List<Row> explainLocks(LockStatementCommand statement, SparkSession session)
      throws Exception {
    LogicalPlan explained = ExplainedStatement.prepare(statement.explainedPlan(), session);
    QueryExecution qe = session.sessionState().executePlan(explained, CommandExecutionMode.SKIP());
    LogicalPlan analyzed = qe.analyzed();
    LogicalPlan optimized = qe.optimizedPlan();
    String facts = FactsExtractor.factsJson(
        ClassicSession.of(session), analyzed, optimized, null, null, statement.sqlText());
    Messages.Explained answer = orDisabledAnswer(session,
        () -> PythonCalls.explain(facts),
        () -> new Messages.Explained(true, null, null, List.of()));
    return rowsOf(statement, LockStatementCommand.PLANNED_LOCK, answer.locks());
  }

  /**
   * Python's answer; with {@code spark.sparklock.enabled=false} and no Python lock service
   * attached, {@code disabled}'s instead: these statements then never fail, they answer like a
   * disabled service (no rows, no-op).
   */
  private static <T> T orDisabledAnswer(
      SparkSession session, Supplier<T> call, Supplier<T> disabled) {
    try {
      return call.get();
    } catch (RuntimeException e) {
      if (disabledWithoutPython(session, e)) {
        return disabled.get();
      }
      throw e;
    }
  }

  /** A missing Python lock service under {@code spark.sparklock.enabled=false}. */
  private static boolean disabledWithoutPython(SparkSession session, Exception e) {
    return !isEnabled(session) && e instanceof SparkLockException failure
        && failure.condition() == ErrorCondition.SPARKLOCK_NOT_ATTACHED;
  }

  private static boolean isEnabled(SparkSession session) {
    try {
      return SessionConf.enabled(ClassicSession.of(session));
    } catch (Exception e) {
      return true;
    }
  }

  /** Rows in the statement's column order, read by name from Python's records. */
  private static List<Row> rowsOf(LockStatementCommand statement, RecordColumns columns,
      List<? extends Record> records) {
    List<Row> rows = new ArrayList<>();
    if (records != null) {
      for (Record record : records) {
        rows.add(RowFactory.create(columns.values(record, statement.columns())));
      }
    }
    return rows;
  }
}
