package io.sparklock.shim.facts;

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

/**
 * The facts of a {@code CALL}, as of Spark 3.5: there is none (no {@code Call} plan), so no plan
 * is a call. The Spark 4.0+ variant reports the tables a call's arguments name.
 */
public final class CallFacts {
  private CallFacts() {}

  /** Never: this Spark line has no CALL. */
  public static boolean isCall(LogicalPlan plan) {
    return false;
  }

  /** Never called on this Spark line ({@link #isCall} is false). */
  static void addArguments(CommandFields out, LogicalPlan call) {}
}
