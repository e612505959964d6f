package io.sparklock.shim.facts;

import io.sparklock.shim.util.ScalaInterop;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;

/**
 * The facts of a {@code CALL}, as of Spark 3.5: Spark has none (no {@code Call} plan, no procedure
 * catalogs). Iceberg's SQL extensions bring their own: a {@code Call(procedure, args)} command
 * (in Spark's package, run by Iceberg's {@code CallExec} like any command, so it is locked as
 * one) whose arguments Iceberg's analysis has put in the procedure's parameters' order. It is
 * read here by reflection: Iceberg is optional.
 */
public final class CallFacts {
  /** Iceberg's command for a resolved {@code CALL} (iceberg-spark-extensions for Spark 3.5). */
  static final String ICEBERG_CALL = "org.apache.spark.sql.catalyst.plans.logical.Call";

  private CallFacts() {}

  /** Iceberg's resolved {@code CALL}. */
  public static boolean isCall(LogicalPlan plan) {
    return plan.getClass().getName().equals(ICEBERG_CALL);
  }

  /** The procedure's own class for a call (its row in the command table), else the plan's. */
  static String commandClass(LogicalPlan plan) {
    Object procedure = isCall(plan) ? Refs.invoke(plan, "procedure") : null;
    return (procedure != null ? procedure : plan).getClass().getName();
  }

  /**
   * The tables a call's arguments name ({@link ProcedureArguments}), by the procedure's
   * parameter names, in its catalog (Iceberg's procedures keep it, protected, as
   * {@code tableCatalog()}).
   */
  static void addArguments(CommandFields out, LogicalPlan plan) {
    Object procedure = Refs.invoke(plan, "procedure");
    List<String> params = new ArrayList<>();
    if (procedure != null && invoke(procedure, "parameters") instanceof Object[] ps) {
      for (Object p : ps) {
        Object name = invoke(p, "name");
        params.add(name == null ? null : name.toString());
      }
    }
    List<Expression> args = new ArrayList<>();
    if (Refs.invoke(plan, "args") instanceof scala.collection.Iterable<?> it) {
      for (Object a : ScalaInterop.anyList(it)) {
        if (a instanceof Expression e) {
          args.add(e);
        }
      }
    }
    ProcedureArguments.add(out, catalogOf(procedure), params, args);
  }

  /** A public method of a class that may be package-private (Iceberg's procedures are). */
  private static Object invoke(Object target, String method) {
    try {
      Method m = target.getClass().getMethod(method);
      m.setAccessible(true);
      return m.invoke(target);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  private static String catalogOf(Object procedure) {
    for (Class<?> c = procedure == null ? null : procedure.getClass(); c != null;
        c = c.getSuperclass()) {
      try {
        Method m = c.getDeclaredMethod("tableCatalog");
        m.setAccessible(true);
        return m.invoke(procedure) instanceof CatalogPlugin cat ? cat.name() : null;
      } catch (NoSuchMethodException e) {
        // declared further up
      } catch (ReflectiveOperationException | RuntimeException e) {
        return null;
      }
    }
    return null;
  }
}
