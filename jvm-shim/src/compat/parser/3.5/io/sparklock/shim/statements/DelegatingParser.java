package io.sparklock.shim.statements;

import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.trees.Origin;
import scala.Option;

/**
 * Spark's {@code ParserInterface} as of Spark 3.5 (Scala 2.12): only what differs from {@link
 * PassThroughParser} on this line (the {@code ParseException} constructor with start and stop
 * origins, {@code getErrorClass}). One variant per line where the interface or these signatures
 * changed (jvm-shim/BRIDGE.md, "Spark versions").
 */
public abstract class DelegatingParser extends ParserAdditions {
  protected DelegatingParser(ParserInterface delegate) {
    super(delegate);
  }

  /** A ParseException on {@code sql} at {@code origin}. */
  static ParseException parseException(String sql, Origin origin, String errorClass,
      scala.collection.immutable.Map<String, String> parameters) {
    return new ParseException(Option.apply(sql), origin, origin, errorClass, parameters);
  }

  /** The error condition (class) of a Spark error. */
  static String condition(ParseException e) {
    return e.getErrorClass();
  }
}
