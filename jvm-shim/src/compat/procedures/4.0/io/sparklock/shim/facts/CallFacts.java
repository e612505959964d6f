package io.sparklock.shim.facts;

import io.sparklock.shim.util.ScalaInterop;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.analysis.ResolvedProcedure;
import org.apache.spark.sql.catalyst.plans.logical.Call;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;

/**
 * The facts of a {@code CALL} of a catalog's stored procedure (Spark 4.0+): the procedure's own
 * class as the command (its row in Python's command table: Iceberg's procedures), else
 * {@code Call}, and the tables its arguments name (jvm-shim/BRIDGE.md, "CALL"); the hook that
 * runs it locked is {@code hook.ProcedureCalls}.
 */
public final class CallFacts {
  private CallFacts() {}

  public static boolean isCall(LogicalPlan plan) {
    return plan instanceof Call;
  }

  /** The procedure's own class once the call is bound, else the plan's class. */
  static String commandClass(LogicalPlan plan) {
    if (plan instanceof Call c && c.procedure() instanceof ResolvedProcedure r) {
      return r.procedure().getClass().getName();
    }
    return plan.getClass().getName();
  }

  /**
   * The tables a call's arguments name ({@link ProcedureArguments}): each constant string
   * argument, under {@code args} and under its parameter's name, resolved in the procedure's
   * catalog. A bound call's arguments are in its parameters' order, named ones placed.
   */
  static void addArguments(CommandFields out, LogicalPlan plan) {
    Call call = (Call) plan;
    String catalog = null;
    List<String> params = new ArrayList<>();
    if (call.procedure() instanceof ResolvedProcedure r) {
      catalog = r.catalog().name();
      if (r.procedure() instanceof BoundProcedure bound) {
        for (ProcedureParameter p : bound.parameters()) {
          params.add(p.name());
        }
      }
    }
    ProcedureArguments.add(out, catalog, params, ScalaInterop.list(call.args()));
  }
}
