package io.sparklock.shim.statements;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

/**
 * {@code EXECUTE IMMEDIATE} under EXPLAIN LOCKS, before Spark 4.2: Spark 3.5 has no such
 * statement; Spark 4.0 and 4.1 have other plan shapes for it, which this shim does not take
 * apart. Spark runs the inner statement while analysing it, so EXPLAIN LOCKS refuses it here
 * rather than run it (the Spark 4.2+ variant explains the inner statement instead).
 */
final class ExecuteImmediate {
  private ExecuteImmediate() {}

  /** Never an inner statement on this Spark line; an EXECUTE IMMEDIATE is refused. */
  static LogicalPlan innerStatement(LogicalPlan plan, SparkSession session) {
    if (plan.getClass().getSimpleName().contains("ExecuteImmediate")) {
      throw new UnsupportedOperationException("EXPLAIN LOCKS of EXECUTE IMMEDIATE needs Spark "
          + "4.2 or later: this Spark would run the statement while analysing it");
    }
    return null;
  }
}
