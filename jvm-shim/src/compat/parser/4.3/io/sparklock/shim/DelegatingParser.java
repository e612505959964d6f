package io.sparklock.shim;

import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.parser.ParameterContext;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.parser.SqlStatementSplitResult;
import org.apache.spark.sql.catalyst.parser.TemporalIdentifier;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.trees.Origin$;
import org.apache.spark.sql.catalyst.trees.Origin;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * Spark's {@code ParserInterface} as of Spark 4.3: every method passes to the delegate
 * except {@code parsePlan} and {@code parsePlanWithParameters}, which try
 * {@link #parseLockStatement} first; plus the {@code ParseException}/{@code Origin} constructors
 * of this Spark line. One variant per line where the interface or those signatures changed
 * (jvm-shim/BRIDGE.md, "Spark versions").
 */
public abstract class DelegatingParser implements ParserInterface {
  protected final ParserInterface delegate;

  protected DelegatingParser(ParserInterface delegate) {
    this.delegate = delegate;
  }

  public ParserInterface delegate() {
    return delegate;
  }

  /**
   * The plan of a lock statement, or null when {@code sql} is not one. {@code parameters} is
   * Spark's {@code ParameterContext} of a parameterized {@code spark.sql(...)} (Spark 4.1+), else
   * null.
   */
  public abstract LogicalPlan parseLockStatement(String sql, Object parameters)
      throws ParseException;

  /** The delegate's plan of {@code sql}, with the parameters when there are any. */
  LogicalPlan delegatePlan(String sql, Object parameters) throws ParseException {
    return parameters == null
        ? delegate.parsePlan(sql)
        : delegate.parsePlanWithParameters(sql, (ParameterContext) parameters);
  }

  /** A ParseException on {@code sql} at {@code origin}. */
  static ParseException parseException(String sql, Origin origin, String errorClass,
      scala.collection.immutable.Map<String, String> parameters) {
    return new ParseException(Option.apply(sql), origin, errorClass, parameters);
  }

  /** The error condition (class) of a Spark error. */
  static String condition(ParseException e) {
    return e.getCondition();
  }

  /** An {@code Origin} at a 1-based line and 0-based column. */
  static Origin origin(int line, int column) {
    Origin$ o = Origin$.MODULE$;
    return o.apply(Option.apply((Object) line), Option.apply((Object) column),
        o.apply$default$3(), o.apply$default$4(), o.apply$default$5(), o.apply$default$6(),
        o.apply$default$7(), o.apply$default$8(), o.apply$default$9(), o.apply$default$10());
  }

  @Override
  public LogicalPlan parsePlan(String sqlText) throws ParseException {
    LogicalPlan plan = parseLockStatement(sqlText, null);
    return plan != null ? plan : delegate.parsePlan(sqlText);
  }

  @Override
  public Expression parseExpression(String sqlText) throws ParseException {
    return delegate.parseExpression(sqlText);
  }

  @Override
  public TableIdentifier parseTableIdentifier(String sqlText) throws ParseException {
    return delegate.parseTableIdentifier(sqlText);
  }

  @Override
  public FunctionIdentifier parseFunctionIdentifier(String sqlText) throws ParseException {
    return delegate.parseFunctionIdentifier(sqlText);
  }

  @Override
  public scala.collection.immutable.Seq<String> parseMultipartIdentifier(String sqlText) throws ParseException {
    return delegate.parseMultipartIdentifier(sqlText);
  }

  @Override
  public LogicalPlan parseQuery(String sqlText) throws ParseException {
    return delegate.parseQuery(sqlText);
  }

  @Override
  public StructType parseTableSchema(String sqlText) throws ParseException {
    return delegate.parseTableSchema(sqlText);
  }

  @Override
  public DataType parseDataType(String sqlText) throws ParseException {
    return delegate.parseDataType(sqlText);
  }

  @Override
  public StructType parseRoutineParam(String sqlText) throws ParseException {
    return delegate.parseRoutineParam(sqlText);
  }

  @Override
  public LogicalPlan parsePlanWithParameters(String sqlText, ParameterContext parameters)
      throws ParseException {
    LogicalPlan plan = parseLockStatement(sqlText, parameters);
    return plan != null ? plan : delegate.parsePlanWithParameters(sqlText, parameters);
  }

  @Override
  public SqlStatementSplitResult splitStatements(String sqlText) {
    return delegate.splitStatements(sqlText);
  }

  @Override
  public TemporalIdentifier parseTemporalTableIdentifier(String sqlText) throws ParseException {
    return delegate.parseTemporalTableIdentifier(sqlText);
  }
}
