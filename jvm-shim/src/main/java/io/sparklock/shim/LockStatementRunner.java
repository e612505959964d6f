package io.sparklock.shim;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.apache.spark.SparkContext;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.CommandExecutionMode;
import org.apache.spark.sql.execution.QueryExecution;


/**
 * Runs one lock statement: builds its request ({@link Messages.CommandRequest}, object resolved by
 * {@link LockTargets}), sends it to Python ({@code SparkLockBridge.callCommand}) and turns the
 * answer into the statement's rows. EXPLAIN LOCKS analyses its statement without running it and
 * asks Python which locks it would take ({@code callExplain}).
 */
final class LockStatementRunner {
  private LockStatementRunner() {}

  static List<Row> run(LockStatementCommand statement, SparkSession session) throws Exception {
    switch (statement.kind()) {
      case SHOW_LOCKS:
        return rowsOf(statement, command(session, request(statement, session,
            statement.nameParts() == null ? null : LockTargets.resolve(statement, session))));
      case LOCK:
        lock(session, request(statement, session, LockTargets.resolve(statement, session)));
        return Collections.emptyList();
      case UNLOCK:
        command(session, request(statement, session, LockTargets.resolve(statement, session)));
        return Collections.emptyList();
      case EXPLAIN_LOCKS:
        return explainLocks(statement, session);
      default:
        throw new IllegalStateException(String.valueOf(statement.kind()));
    }
  }

  /** The request of SHOW LOCKS / LOCK / UNLOCK (BRIDGE.md "Command requests"). */
  private static Messages.CommandRequest request(LockStatementCommand statement,
      SparkSession session, Messages.LockTarget object) {
    var classic = ClassicSession.of(session); // the classic session type differs per Spark line
    boolean lock = statement.kind() == LockStatementCommand.Kind.LOCK;
    boolean unlock = statement.kind() == LockStatementCommand.Kind.UNLOCK;
    // A LOCK TABLE wait ends on a cancellation of its thread's job group or tags (BRIDGE.md).
    SparkContext sc = classic.sparkContext();
    List<String> tags = null;
    ServerSessions.Identity caller = null;
    if (lock) {
      tags = new ArrayList<>(ScalaInterop.list(sc.getJobTags()));
      tags.sort(null);
    }
    if (lock || unlock) { // who owns an explicit lock; who asks to remove one (unlock.policy)
      caller = ServerSessions.identify(session, sc);
    }
    return new Messages.CommandRequest(
        statement.kind().name(),
        classic.sessionUUID(),
        SparkLockBridge.sessionConf(classic),
        statement.kind() == LockStatementCommand.Kind.SHOW_LOCKS ? statement.columns() : null,
        object,
        statement.lockMode(),
        lock ? statement.sqlText() : null,
        lock ? sc.getLocalProperty("spark.jobGroup.id") : null,
        tags,
        caller == null ? null : caller.user(),
        caller == null ? null : caller.client(),
        null,
        null,
        caller == null ? null : caller.agent());
  }

  /**
   * LOCK TABLE, counted as a grant or a refusal of one lock ({@link LockTelemetry}; the wait is
   * the call's duration). Its release (UNLOCK, a closed server session) is not timed here.
   */
  private static void lock(SparkSession session, Messages.CommandRequest request) {
    if (!isEnabled(session)) {
      command(session, request);
      return;
    }
    SparkContext sc = ClassicSession.of(session).sparkContext();
    long start = System.nanoTime();
    LockTelemetry.waitStarted();
    try {
      command(session, request);
    } catch (RuntimeException e) {
      LockTelemetry.refused(sc, null, request.sql(), e, System.nanoTime() - start);
      throw e;
    } finally {
      LockTelemetry.waitEnded();
    }
    LockTelemetry.granted(sc, null, null, request.sql(), 1, System.nanoTime() - start, false);
  }

  private static Messages.Rows command(SparkSession session, Messages.CommandRequest request) {
    try {
      return SparkLockBridge.callCommand(request);
    } catch (RuntimeException e) {
      if (disabledWithoutPython(session, e)) {
        return new Messages.Rows(true, null, null, List.of(), List.of());
      }
      throw e;
    }
  }

  private static List<Row> explainLocks(LockStatementCommand statement, SparkSession session)
      throws Exception {
    LogicalPlan explained = ExplainedStatement.prepare(statement.explainedPlan(), session);
    QueryExecution qe = session.sessionState().executePlan(explained, CommandExecutionMode.SKIP());
    LogicalPlan analyzed = qe.analyzed();
    LogicalPlan optimized = qe.optimizedPlan();
    String facts = FactsExtractor.factsJson(ClassicSession.of(session), analyzed, optimized, null, null,
        statement.sqlText());
    Messages.Rows answer;
    try {
      answer = SparkLockBridge.callExplain(facts);
    } catch (RuntimeException e) {
      if (disabledWithoutPython(session, e)) {
        return Collections.emptyList();
      }
      throw e;
    }
    return rowsOf(statement, answer);
  }

  /**
   * With {@code spark.sparklock.enabled=false} these statements must never fail, even when no
   * Python lock service is attached: they then answer like a disabled service (no rows, no-op).
   */
  private static boolean disabledWithoutPython(SparkSession session, Exception e) {
    return !isEnabled(session) && e instanceof SparkLockException failure
        && failure.condition() == ErrorCondition.SPARKLOCK_NOT_ATTACHED;
  }

  private static boolean isEnabled(SparkSession session) {
    try {
      return SparkLockBridge.enabled(ClassicSession.of(session));
    } catch (Exception e) {
      return true;
    }
  }

  /** Rows in the statement's column order, taken by name from Python's {columns, rows}. */
  private static List<Row> rowsOf(LockStatementCommand statement, Messages.Rows answer) {
    List<String> columns = statement.columns();
    List<Row> rows = new ArrayList<>();
    if (answer.rows() == null) {
      return rows;
    }
    List<String> named = answer.columns() == null ? List.of() : answer.columns();
    int[] index = new int[columns.size()];
    for (int c = 0; c < columns.size(); c++) {
      index[c] = named.isEmpty() ? c : named.indexOf(columns.get(c));
    }
    for (List<String> row : answer.rows()) {
      Object[] values = new Object[columns.size()];
      for (int c = 0; c < columns.size(); c++) {
        values[c] = index[c] >= 0 && index[c] < row.size() ? row.get(index[c]) : null;
      }
      rows.add(RowFactory.create(values));
    }
    return rows;
  }

}
