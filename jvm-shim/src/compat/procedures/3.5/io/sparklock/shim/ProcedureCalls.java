package io.sparklock.shim;

import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

/**
 * {@code CALL} of a catalog's stored procedure, as of Spark 3.5: there is none (no {@code Call}
 * plan, no procedure catalogs), so nothing to register and no plan is a call. The Spark 4.0+
 * variant runs a CALL's procedure holding its locks (jvm-shim/BRIDGE.md, "CALL").
 */
final class ProcedureCalls {
  private ProcedureCalls() {}

  /** Nothing to inject on this Spark line. */
  static void register(SparkSessionExtensions ext) {}

  /** Never: this Spark line has no CALL. */
  static boolean isCall(LogicalPlan plan) {
    return false;
  }

  /** Never called on this Spark line ({@link #isCall} is false). */
  static void addArguments(CommandFields out, LogicalPlan call) {}
}
