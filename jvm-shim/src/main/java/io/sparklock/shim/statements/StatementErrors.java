package io.sparklock.shim.statements;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.QueryContext;
import org.apache.spark.sql.AnalysisException;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.trees.CurrentOrigin$;
import org.apache.spark.sql.catalyst.trees.Origin;
import scala.Option;

/**
 * The lock statements' errors, as Spark raises its own: {@code ParseException}s positioned on the
 * user's statement text (also when Spark parsed a piece of it), {@code AnalysisException}s with
 * Spark's error classes, and names quoted the way Spark prints them.
 */
final class StatementErrors {
  private StatementErrors() {}

  // -- parse errors ---------------------------------------------------------------------------

  static ParseException parseError(String sql, int offset, String errorClass,
      Map<String, String> parameters) {
    return DelegatingParser.parseException(sql, origin(sql, offset), errorClass,
        scalaMap(parameters));
  }

  /**
   * Re-base a ParseException Spark raised on {@code piece} (where the user's text starts at
   * {@code pieceBase}) onto the user's statement, whose text starts at {@code sqlBase}.
   */
  static ParseException rebase(ParseException e, String piece, int pieceBase, String sql,
      int sqlBase) {
    Origin start = e.start();
    int offset = sqlBase;
    if (start.line().isDefined() && start.startPosition().isDefined()) {
      int inPiece = offsetOf(piece, (Integer) start.line().get(),
          (Integer) start.startPosition().get());
      offset = sqlBase + Math.max(0, inPiece - pieceBase);
    }
    offset = Math.min(offset, sql.length());
    return DelegatingParser.parseException(sql, origin(sql, offset),
        DelegatingParser.condition(e), e.messageParameters());
  }

  /** The Origin (line from 1, column from 0) of a character offset of {@code sql}. */
  static Origin origin(String sql, int offset) {
    int line = 1;
    int col = 0;
    for (int i = 0; i < offset && i < sql.length(); i++) {
      if (sql.charAt(i) == '\n') {
        line++;
        col = 0;
      } else {
        col++;
      }
    }
    return origin(line, col);
  }

  /**
   * An {@code Origin} at a 1-based line and 0-based column, every other field its default: made
   * by Spark's {@code CurrentOrigin} (whose {@code Origin.apply} arity differs by Spark line) and
   * the thread's current origin put back as it was.
   */
  static Origin origin(int line, int column) {
    CurrentOrigin$ current = CurrentOrigin$.MODULE$;
    Origin saved = current.get();
    try {
      current.reset();
      current.setPosition(line, column);
      return current.get();
    } finally {
      current.set(saved);
    }
  }

  static int offsetOf(String text, int line, int col) {
    int i = 0;
    for (int l = 1; l < line && i < text.length(); i++) {
      if (text.charAt(i) == '\n') {
        l++;
      }
    }
    return Math.min(text.length(), i + col);
  }

  // -- analysis errors ------------------------------------------------------------------------

  /** An AnalysisException of one of Spark's error classes. */
  static AnalysisException analysis(String errorClass, String... parameters) {
    return new AnalysisException(errorClass, scalaMap(params(parameters)));
  }

  /**
   * An AnalysisException of {@code errorClass}, or, on a Spark that lacks that class (3.5 has no
   * EXPECT_TABLE_NOT_VIEW: building it throws INTERNAL_ERROR), one whose message names it.
   */
  static AnalysisException errorOrMessage(String errorClass, String message,
      String... parameters) {
    try {
      return analysis(errorClass, parameters);
    } catch (Exception unknownErrorClass) { // SparkException INTERNAL_ERROR (undeclared in Scala)
      return new AnalysisException("[" + errorClass + "] " + message + ".",
          Option.empty(), Option.empty(), Option.empty(), Option.empty(),
          scalaMap(Collections.emptyMap()), new QueryContext[0]);
    }
  }

  /** An AnalysisException with our own complete message (no Spark error class fits). */
  static AnalysisException analysisError(String message) {
    return new AnalysisException("[SPARKLOCK_INVALID_PARTITION_SPEC] " + message + ".",
        Option.empty(), Option.empty(), Option.empty(), Option.empty(),
        scalaMap(Collections.emptyMap()), new QueryContext[0]);
  }

  // -- names and parameters -------------------------------------------------------------------

  static String quote(String part) {
    return "`" + part.replace("`", "``") + "`";
  }

  static String quoted(List<String> parts) {
    return quoted(parts, ".");
  }

  static String quoted(List<String> parts, String separator) {
    StringBuilder b = new StringBuilder();
    for (String p : parts) {
      if (b.length() > 0) {
        b.append(separator);
      }
      b.append(quote(p));
    }
    return b.toString();
  }

  /** Error parameters from name, value, name, value, ... (in that order). */
  static Map<String, String> params(String... kv) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i + 1 < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return m;
  }

  /**
   * An immutable Scala map of a Java one, in its order (error parameters, partition specs); built
   * with {@code updated}, which Scala 2.12 and 2.13 both have.
   */
  @SuppressWarnings("unchecked")
  static scala.collection.immutable.Map<String, String> scalaMap(Map<String, String> map) {
    scala.collection.immutable.Map<String, String> result =
        (scala.collection.immutable.Map<String, String>) (Object)
            scala.collection.immutable.ListMap$.MODULE$.empty();
    for (Map.Entry<String, String> e : map.entrySet()) {
      result = result.updated(e.getKey(), e.getValue());
    }
    return result;
  }

  /** Throws a checked exception (Spark's, from Scala code) through Java signatures without one. */
  @SuppressWarnings("unchecked")
  static <E extends Throwable> RuntimeException sneaky(Throwable e) throws E {
    throw (E) e;
  }
}
