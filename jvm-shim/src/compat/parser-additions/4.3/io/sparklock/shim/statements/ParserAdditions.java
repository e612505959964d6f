package io.sparklock.shim.statements;

import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.parser.SqlStatementSplitResult;
import org.apache.spark.sql.catalyst.parser.TemporalIdentifier;

/**
 * The {@code ParserInterface} methods Spark 4.3 adds ({@code splitStatements}, {@code
 * parseTemporalTableIdentifier}), passed through to Spark's parser. Every {@code
 * DelegatingParser} variant extends this class, so a method added by one line is written once.
 */
public abstract class ParserAdditions extends PassThroughParser {
  protected ParserAdditions(ParserInterface delegate) {
    super(delegate);
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
