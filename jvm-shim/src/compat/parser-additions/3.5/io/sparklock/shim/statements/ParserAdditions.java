package io.sparklock.shim.statements;

import org.apache.spark.sql.catalyst.parser.ParserInterface;

/**
 * The {@code ParserInterface} methods a later Spark line adds, passed through to Spark's parser;
 * up to Spark 4.2 there are none. Every {@code DelegatingParser} variant extends this class, so
 * a method added by one line is written once, not in each line's parser from then on.
 */
public abstract class ParserAdditions extends PassThroughParser {
  protected ParserAdditions(ParserInterface delegate) {
    super(delegate);
  }
}
