package io.sparklock.shim.statements;

import io.sparklock.shim.hook.SparkLockColumnarRule;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

/**
 * The plan EXPLAIN LOCKS analyses for a statement. EXPLAIN LOCKS must run nothing, yet Spark runs
 * some statements while it analyses them: a CALL's procedure ({@code ExecutableDuringAnalysis},
 * Spark 4) and the statement inside EXECUTE IMMEDIATE. Those are taken apart here first, so the
 * analysis sees what would run (and so what would be locked) without running it. A SQL script
 * (Spark 4, {@code BEGIN ... END}) is refused: what it runs depends on its control flow.
 */
final class ExplainedStatement {
  /** EXECUTE IMMEDIATE of EXECUTE IMMEDIATE ... : a bound on the unwrapping, not a Spark limit. */
  private static final int MAX_NESTING = 16;

  private ExplainedStatement() {}

  /** {@code parsed}, with EXECUTE IMMEDIATE replaced by its inner statement and a CALL staged. */
  static LogicalPlan prepare(LogicalPlan parsed, SparkSession session) throws Exception {
    LogicalPlan plan = parsed;
    for (int depth = 0; depth < MAX_NESTING; depth++) {
      if (plan.getClass().getSimpleName().equals("CompoundBody")) {
        // A script's statements depend on its control flow; each is locked as it runs.
        throw new UnsupportedOperationException("EXPLAIN LOCKS explains one statement, not a SQL "
            + "script: explain the script's statements one by one");
      }
      LogicalPlan inner = ExecuteImmediate.innerStatement(plan, session);
      if (inner == null) {
        return staged(plan);
      }
      if (SparkLockColumnarRule.InsertLockRoot.isOwnStatement(inner)) {
        throw new UnsupportedOperationException("EXPLAIN LOCKS explains the locks a statement "
            + "would take; the statement inside EXECUTE IMMEDIATE is itself a lock statement");
      }
      plan = inner;
    }
    throw new UnsupportedOperationException(
        "EXPLAIN LOCKS: EXECUTE IMMEDIATE nested deeper than " + MAX_NESTING);
  }

  /**
   * A statement Spark runs while analysing it ({@code ExecutableDuringAnalysis}, Spark 4: a CALL)
   * staged as Spark's own EXPLAIN stages it. Reflection: Spark 3.5 has no such statements.
   */
  static LogicalPlan staged(LogicalPlan plan) {
    try {
      Class<?> executable = Class.forName(
          "org.apache.spark.sql.catalyst.plans.logical.ExecutableDuringAnalysis");
      if (executable.isInstance(plan)) {
        return (LogicalPlan) executable.getMethod("stageForExplain").invoke(plan);
      }
    } catch (ClassNotFoundException e) {
      return plan;
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot stage " + plan.nodeName() + " for EXPLAIN", e);
    }
    return plan;
  }
}
