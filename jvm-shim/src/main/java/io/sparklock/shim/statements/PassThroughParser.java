package io.sparklock.shim.statements;

import io.sparklock.shim.util.ScalaInterop;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * The part of Spark's {@code ParserInterface} that is the same on every supported Spark: each
 * method passes to the delegate, except {@code parsePlan}, which tries
 * {@link #parseLockStatement} first. The per-line {@code DelegatingParser} variants
 * (jvm-shim/src/compat/parser) add only what differs between Spark lines: methods a line adds to
 * the interface, the {@code ParseException} constructor and the error condition getter.
 */
public abstract class PassThroughParser implements ParserInterface {
  protected final ParserInterface delegate;

  protected PassThroughParser(ParserInterface delegate) {
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

  /**
   * The delegate's plan of {@code sql}; {@code parameters} is always null before Spark 4.1 (whose
   * variant passes them on).
   */
  LogicalPlan delegatePlan(String sql, Object parameters) throws ParseException {
    return delegate.parsePlan(sql);
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

  // Scala 2.12 declares scala.collection.Seq here: an immutable Seq overrides both.
  @Override
  public scala.collection.immutable.Seq<String> parseMultipartIdentifier(String sqlText)
      throws ParseException {
    return ScalaInterop.immutableSeq(delegate.parseMultipartIdentifier(sqlText));
  }
}
