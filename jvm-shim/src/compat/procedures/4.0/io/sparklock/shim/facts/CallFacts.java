package io.sparklock.shim.facts;

import io.sparklock.shim.util.ScalaInterop;
import io.sparklock.shim.wire.Facts;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.Call;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.types.StringType;

/**
 * The facts of a {@code CALL} of a catalog's stored procedure (Spark 4.0+): command {@code Call},
 * field {@code args} (jvm-shim/BRIDGE.md, "CALL"); the hook that runs it locked is {@code
 * hook.ProcedureCalls}.
 */
public final class CallFacts {
  private CallFacts() {}

  public static boolean isCall(LogicalPlan plan) {
    return plan instanceof Call;
  }

  /**
   * The tables a call's arguments name: each constant string argument that the session's parser
   * reads as a (multi-part) name of an existing table (names of other catalogs are reported as
   * named; Python locks session-catalog tables only). Other strings (a strategy, a date) are no
   * table and name nothing.
   */
  static void addArguments(CommandFields out, LogicalPlan plan) {
    Call call = (Call) plan;
    SparkSession session = out.refs.session;
    for (Expression arg : ScalaInterop.list(call.args())) {
      if (!arg.foldable() || !(arg.dataType() instanceof StringType)) {
        continue;
      }
      Object value = arg.eval(null);
      if (value == null) {
        continue;
      }
      List<String> parts;
      try {
        parts = new ArrayList<>(ScalaInterop.list(
            session.sessionState().sqlParser().parseMultipartIdentifier(value.toString())));
      } catch (Exception e) { // not a name (ParseException is checked in Scala only)
        continue;
      }
      if (parts.isEmpty()) {
        continue;
      }
      Facts.TableField table = out.nameParts("args", parts);
      if (table.exists() == null || table.exists()) {
        out.add(table);
      }
    }
  }
}
