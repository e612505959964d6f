package io.sparklock.shim.statements;

import org.apache.spark.sql.catalyst.parser.ParameterContext;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.trees.Origin$;
import org.apache.spark.sql.catalyst.trees.Origin;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * Spark's {@code ParserInterface} as of Spark 4.1 and 4.2: what differs from {@link PassThroughParser}:  {@code parsePlan} and {@code parsePlanWithParameters}, which try
 * {@link #parseLockStatement} first; plus the {@code ParseException}/{@code Origin} constructors
 * of this Spark line. One variant per line where the interface or those signatures changed
 * (jvm-shim/BRIDGE.md, "Spark versions").
 */
public abstract class DelegatingParser extends PassThroughParser {
  protected DelegatingParser(ParserInterface delegate) {
    super(delegate);
  }


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
  public scala.collection.immutable.Seq<String> parseMultipartIdentifier(String sqlText) throws ParseException {
    return delegate.parseMultipartIdentifier(sqlText);
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
}
