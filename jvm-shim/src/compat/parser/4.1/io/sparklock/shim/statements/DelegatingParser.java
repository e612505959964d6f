package io.sparklock.shim.statements;

import org.apache.spark.sql.catalyst.parser.ParameterContext;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.trees.Origin;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * Spark's {@code ParserInterface} as of Spark 4.1: only what differs from {@link
 * PassThroughParser} on this line ({@code parsePlanWithParameters}, which tries {@link
 * #parseLockStatement} first, and {@code parseRoutineParam}); what 4.3 adds is in {@link
 * ParserAdditions}. One variant per line where the interface or these signatures changed
 * (jvm-shim/BRIDGE.md, "Spark versions").
 */
public abstract class DelegatingParser extends ParserAdditions {
  protected DelegatingParser(ParserInterface delegate) {
    super(delegate);
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

  @Override
  public StructType parseRoutineParam(String sqlText) throws ParseException {
    return delegate.parseRoutineParam(sqlText);
  }

  @Override
  LogicalPlan delegatePlan(String sql, Object parameters) throws ParseException {
    return parameters == null
        ? delegate.parsePlan(sql)
        : delegate.parsePlanWithParameters(sql, (ParameterContext) parameters);
  }

  @Override
  public LogicalPlan parsePlanWithParameters(String sqlText, ParameterContext parameters)
      throws ParseException {
    LogicalPlan plan = parseLockStatement(sqlText, parameters);
    return plan != null ? plan : delegate.parsePlanWithParameters(sqlText, parameters);
  }
}
