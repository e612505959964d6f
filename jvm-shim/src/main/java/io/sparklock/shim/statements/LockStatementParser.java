package io.sparklock.shim.statements;

import io.sparklock.shim.statements.SqlLexer.LexError;
import io.sparklock.shim.statements.SqlLexer.Lexer;
import io.sparklock.shim.statements.SqlLexer.Tok;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

/**
 * Spark parser extension for sparklock's lock statements.
 *
 * <pre>
 *   SHOW LOCKS [EXTENDED]
 *   SHOW LOCKS &lt;table&gt; [PARTITION (k = v, ...)] [EXTENDED]
 *   SHOW LOCKS (DATABASE | SCHEMA) &lt;db&gt; [EXTENDED]
 *   LOCK TABLE &lt;table&gt; [PARTITION (k = v, ...)] (SHARED | EXCLUSIVE)
 *   UNLOCK TABLE &lt;table&gt; [PARTITION (k = v, ...)]
 *   LOCK (DATABASE | SCHEMA) &lt;db&gt; (SHARED | EXCLUSIVE)
 *   UNLOCK (DATABASE | SCHEMA) &lt;db&gt;
 *   EXPLAIN LOCKS &lt;statement&gt;
 * </pre>
 *
 * A small tokenizer of our own ({@link SqlLexer}) recognises only the statement head and its
 * structure.
 * Everything that is not a lock statement goes to the delegate untouched. The pieces are parsed by
 * Spark itself: identifiers with {@code parseMultipartIdentifier}, the partition spec as part of
 * an {@code ALTER TABLE .. DROP PARTITION (spec)} statement (so values are Spark literals with
 * Spark's escapes, duplicate keys are rejected the Spark way), and the statement explained by
 * EXPLAIN LOCKS with the delegate's {@code parsePlan}. Spark's errors on those pieces are re-based
 * onto the user's statement text. Resolution against the catalog happens when the command runs
 * ({@link LockStatementCommand}).
 */
public final class LockStatementParser extends DelegatingParser {

  private final SparkSession session;

  public LockStatementParser(SparkSession session, ParserInterface delegate) {
    super(delegate);
    this.session = session;
  }

  public SparkSession session() {
    return session;
  }

  // ParserInterface: DelegatingParser (one variant per Spark line, jvm-shim/src/compat/parser).

  // -- lock statements --------------------------------------------------------------------------

  /** The plan of a lock statement, or null when {@code sql} is not one (the delegate's turn). */
  @Override
  public LogicalPlan parseLockStatement(String sql, Object parameters) throws ParseException {
    if (sql == null) {
      return null;
    }
    Lexer lexer = new Lexer(sql);
    String head = headOf(lexer);
    if (head == null) {
      return null;
    }
    return new StatementGrammar(this, sql, lexer, parameters).parse(head);
  }

  /** True when {@code sql} starts like a lock statement (used by other parts of the shim). */
  public static boolean isLockStatement(String sql) {
    return sql != null && headOf(new Lexer(sql)) != null;
  }

  /**
   * "SHOW LOCKS", "LOCK", "UNLOCK" or "EXPLAIN LOCKS" when the text starts with that head, else
   * null. LOCK and UNLOCK are no Spark statements, so every statement starting with them is ours
   * (a wrong second word then gets our error rather than Spark's generic one).
   */
  static String headOf(Lexer lexer) {
    try {
      Tok first = lexer.peek(0);
      if (first.isWord("LOCK")) {
        return "LOCK";
      }
      if (first.isWord("UNLOCK")) {
        return "UNLOCK";
      }
      if (first.isWord("SHOW") || first.isWord("EXPLAIN")) {
        if (lexer.peek(1).isWord("LOCKS")) {
          return first.isWord("SHOW") ? "SHOW LOCKS" : "EXPLAIN LOCKS";
        }
      }
      return null;
    } catch (LexError e) {
      return null;
    }
  }

  /** The statement text without surrounding whitespace and trailing semicolons. */
  static String trimStatement(String text) {
    String s = text.trim();
    while (s.endsWith(";")) {
      s = s.substring(0, s.length() - 1).trim();
    }
    return s;
  }
}
