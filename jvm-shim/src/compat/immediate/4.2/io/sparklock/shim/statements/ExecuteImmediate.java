package io.sparklock.shim.statements;

import io.sparklock.shim.util.ScalaInterop;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.UnresolvedExecuteImmediate;
import org.apache.spark.sql.catalyst.expressions.Alias$;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.VariableReference;
import org.apache.spark.sql.catalyst.parser.HybridParameterContext;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.CompoundBody;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OneRowRelation;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.errors.QueryCompilationErrors;
import org.apache.spark.sql.execution.CommandExecutionMode;
import org.apache.spark.sql.types.StringType;

/**
 * {@code EXECUTE IMMEDIATE} under EXPLAIN LOCKS (Spark 4.2+). Spark's analyzer runs the inner
 * statement ({@code ResolveExecuteImmediate} calls {@code sql()} on it), so analysing the outer
 * statement would run it and leave only its result to explain. Instead the statement text and
 * the {@code USING} values are evaluated as Spark evaluates them (constants and session
 * variables, resolved by Spark's analyzer over a one-row projection, which runs nothing), and the
 * text is parsed with those values bound the way {@code sql(text, args, names)} binds them: the
 * plan that EXPLAIN LOCKS analyses is the one the statement would run.
 */
final class ExecuteImmediate {
  private ExecuteImmediate() {}

  /** The statement an EXECUTE IMMEDIATE would run, parsed (not analysed); null for any other plan. */
  static LogicalPlan innerStatement(LogicalPlan plan, SparkSession session) throws Exception {
    if (!(plan instanceof UnresolvedExecuteImmediate immediate)) {
      return null;
    }
    List<Expression> args = ScalaInterop.list(immediate.args());
    List<NamedExpression> columns = new ArrayList<>();
    List<String> names = new ArrayList<>();
    columns.add(alias(immediate.sqlStmtStr(), "sql"));
    for (int i = 0; i < args.size(); i++) {
      Expression arg = args.get(i);
      if (arg instanceof Alias named) { // USING value AS name
        columns.add(alias(named.child(), named.name()));
        names.add(named.name());
      } else {
        columns.add(alias(arg, "arg" + i));
        names.add("");
      }
    }
    LogicalPlan values = new Project(ScalaInterop.seq(columns), new OneRowRelation());
    LogicalPlan resolved = session.sessionState()
        .executePlan(values, CommandExecutionMode.SKIP()).analyzed();
    List<NamedExpression> out = ScalaInterop.list(((Project) resolved).projectList());

    String sql = statementText(((Alias) out.get(0)).child());
    ParserInterface parser = session.sessionState().sqlParser();
    LogicalPlan inner;
    if (args.isEmpty()) {
      inner = parser.parsePlan(sql);
    } else {
      List<Expression> bound = new ArrayList<>();
      for (int i = 0; i < args.size(); i++) {
        Expression resolvedArg = ((Alias) out.get(i + 1)).child();
        bound.add(value(resolvedArg));
        if (names.get(i).isEmpty() && resolvedArg instanceof VariableReference variable) {
          // a variable passed as it is keeps its name, as Spark binds it (USING p for :p)
          names.set(i, variable.originalNameParts().last());
        }
      }
      inner = parser.parsePlanWithParameters(sql,
          new HybridParameterContext(ScalaInterop.seq(bound), ScalaInterop.seq(names)));
    }
    if (inner instanceof CompoundBody) {
      throw (Exception) QueryCompilationErrors.sqlScriptInExecuteImmediate(sql);
    }
    return inner;
  }

  private static Alias alias(Expression child, String name) {
    Alias$ a = Alias$.MODULE$;
    return a.apply(child, name, a.apply$default$3(child, name), a.apply$default$4(child, name),
        a.apply$default$5(child, name), a.apply$default$6(child, name));
  }

  private static String statementText(Expression text) throws Exception {
    if (!(text.dataType() instanceof StringType)) {
      throw (Exception) QueryCompilationErrors.invalidExecuteImmediateExpressionType(
          text.dataType());
    }
    Object value = text.eval(null);
    if (value == null) {
      throw (Exception) QueryCompilationErrors.nullSQLStringExecuteImmediate(text.sql());
    }
    return value.toString();
  }

  /** A USING value as the literal Spark binds: a constant or a session variable's value. */
  private static Expression value(Expression arg) throws Exception {
    if (!(arg.foldable() || arg instanceof VariableReference)) {
      throw (Exception) QueryCompilationErrors.unsupportedParameterExpression(arg);
    }
    return new Literal(arg.eval(null), arg.dataType());
  }
}
