package io.sparklock.shim.statements;

import static io.sparklock.shim.statements.StatementErrors.params;
import static io.sparklock.shim.statements.StatementErrors.parseError;
import static io.sparklock.shim.statements.StatementErrors.rebase;

import io.sparklock.shim.statements.SqlLexer.Kind;
import io.sparklock.shim.statements.SqlLexer.LexError;
import io.sparklock.shim.statements.SqlLexer.Lexer;
import io.sparklock.shim.statements.SqlLexer.Tok;
import io.sparklock.shim.util.ScalaInterop;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.analysis.PartitionSpec;
import org.apache.spark.sql.catalyst.analysis.UnresolvedPartitionSpec;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.plans.logical.DropPartitions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

/**
 * Recursive descent over the tokens of one lock statement ({@link LockStatementParser} recognises
 * the head and hands the rest here; Spark's own parser reads the pieces).
 */
final class StatementGrammar {
  private final LockStatementParser parser;
  private final String sql;
  private final Lexer lexer;
  private final Object parameters;
  private int pos = 0;

  StatementGrammar(LockStatementParser parser, String sql, Lexer lexer, Object parameters) {
    this.parser = parser;
    this.sql = sql;
    this.lexer = lexer;
    this.parameters = parameters;
  }

  LogicalPlan parse(String head) throws ParseException {
    try {
      switch (head) {
        case "SHOW LOCKS":
          return showLocks();
        case "LOCK":
          return lock();
        case "UNLOCK":
          return unlock();
        case "EXPLAIN LOCKS":
          return explainLocks();
        default:
          throw new IllegalStateException(head);
      }
    } catch (LexError e) {
      throw parseError(sql, e.offset, "PARSE_SYNTAX_ERROR",
          params("error", e.near, "hint", ": " + e.getMessage()));
    }
  }

  private LogicalPlan showLocks() throws ParseException {
    next(); // SHOW
    next(); // LOCKS
    if (atEnd(pos)) {
      return LockStatementCommand.showLocks(null, false, null, false);
    }
    if (peek().isWord("EXTENDED") && atEnd(pos + 1)) {
      next();
      return LockStatementCommand.showLocks(null, false, null, true);
    }
    if (peek().isWord("DATABASE") || peek().isWord("SCHEMA")) {
      next();
      List<String> db = identifier("a database name");
      boolean extended = optionalWord("EXTENDED");
      expectEnd(extended ? "the end of the statement" : "EXTENDED or the end of the statement");
      return LockStatementCommand.showLocks(db, true, null, extended);
    }
    List<String> table =
        identifier("a table name, DATABASE <name>, EXTENDED or the end of the statement");
    List<String[]> spec = optionalPartitionSpec();
    boolean extended = optionalWord("EXTENDED");
    expectEnd(extended ? "the end of the statement"
        : spec == null ? "PARTITION (...), EXTENDED or the end of the statement"
        : "EXTENDED or the end of the statement");
    return LockStatementCommand.showLocks(table, false, spec, extended);
  }

  private LogicalPlan lock() throws ParseException {
    next(); // LOCK
    if (peek().isWord("TABLE")) {
      next();
      List<String> table = identifier("a table name");
      List<String[]> spec = optionalPartitionSpec();
      String mode = mode(spec == null ? "PARTITION (...), SHARED or EXCLUSIVE"
          : "SHARED or EXCLUSIVE");
      expectEnd("the end of the statement");
      return LockStatementCommand.lock(table, false, spec, mode, statementText());
    }
    if (peek().isWord("DATABASE") || peek().isWord("SCHEMA")) {
      next();
      List<String> db = identifier("a database name");
      String mode = mode("SHARED or EXCLUSIVE");
      expectEnd("the end of the statement");
      return LockStatementCommand.lock(db, true, null, mode, statementText());
    }
    throw syntaxError(peek(), "expected TABLE or DATABASE after LOCK");
  }

  private LogicalPlan unlock() throws ParseException {
    next(); // UNLOCK
    if (peek().isWord("TABLE")) {
      next();
      List<String> table = identifier("a table name");
      List<String[]> spec = optionalPartitionSpec();
      expectEnd(spec == null ? "PARTITION (...) or the end of the statement"
          : "the end of the statement");
      return LockStatementCommand.unlock(table, false, spec, statementText());
    }
    if (peek().isWord("DATABASE") || peek().isWord("SCHEMA")) {
      next();
      List<String> db = identifier("a database name");
      expectEnd("the end of the statement");
      return LockStatementCommand.unlock(db, true, null, statementText());
    }
    throw syntaxError(peek(), "expected TABLE or DATABASE after UNLOCK");
  }

  private LogicalPlan explainLocks() throws ParseException {
    next(); // EXPLAIN
    Tok locks = next(); // LOCKS
    int base = locks.end;
    if (atEnd(pos)) {
      throw syntaxError(peek(), "expected a statement after EXPLAIN LOCKS");
    }
    String inner = sql.substring(base);
    Lexer innerLexer = new Lexer(inner);
    String innerHead = LockStatementParser.headOf(innerLexer);
    if (innerHead != null) {
      throw parseError(sql, peek().start, "_LEGACY_ERROR_TEMP_0035",
          params("message", "EXPLAIN LOCKS explains the locks a statement would take; "
              + innerHead + " is itself a lock statement"));
    }
    LogicalPlan plan;
    try {
      plan = parser.delegatePlan(inner, parameters);
    } catch (ParseException e) {
      throw rebase(e, inner, 0, sql, base);
    }
    // Run time stages what Spark would run during analysis (ExplainedStatement).
    return LockStatementCommand.explainLocks(plan, LockStatementParser.trimStatement(inner));
  }

  // -- pieces -----------------------------------------------------------------------------

  /** A (multi-part) identifier, parsed by Spark from its exact text span. */
  private List<String> identifier(String expected) throws ParseException {
    Tok first = peek();
    if (!first.isIdentifierPart()) {
      throw syntaxError(first, "expected " + expected);
    }
    next();
    Tok last = first;
    while (peek().isSymbol('.')) {
      next();
      Tok part = peek();
      if (!part.isIdentifierPart()) {
        throw syntaxError(part, "expected an identifier after '.'");
      }
      last = next();
    }
    String text = sql.substring(first.start, last.end);
    try {
      return new ArrayList<>(
          ScalaInterop.list(parser.delegate().parseMultipartIdentifier(text)));
    } catch (ParseException e) {
      throw rebase(e, text, 0, sql, first.start);
    }
  }

  /**
   * {@code PARTITION ( ... )}: the parenthesised text is handed to Spark inside
   * {@code ALTER TABLE t DROP PARTITION (...)}, and the spec is read from the plan Spark built.
   * Returns (column, value) pairs as written (value null for a NULL literal), or null when there
   * is no PARTITION clause.
   */
  private List<String[]> optionalPartitionSpec() throws ParseException {
    if (!peek().isWord("PARTITION")) {
      return null;
    }
    next();
    Tok open = peek();
    if (!open.isSymbol('(')) {
      throw syntaxError(open, "expected '(' after PARTITION");
    }
    next();
    int depth = 1;
    Tok close = null;
    while (close == null) {
      Tok t = next();
      if (t.kind == Kind.EOF) {
        throw syntaxError(t, "missing ')' to close PARTITION (");
      }
      if (t.isSymbol('(')) {
        depth++;
      } else if (t.isSymbol(')') && --depth == 0) {
        close = t;
      }
    }
    String specText = sql.substring(open.start, close.end);
    String prefix = "ALTER TABLE sparklock_partition_spec DROP PARTITION ";
    String synthetic = prefix + specText;
    LogicalPlan plan;
    try {
      plan = parser.delegate().parsePlan(synthetic);
    } catch (ParseException e) {
      throw rebase(e, synthetic, prefix.length(), sql, open.start);
    }
    if (!(plan instanceof DropPartitions)) {
      throw parseError(sql, open.start, "_LEGACY_ERROR_TEMP_0035",
          params("message", "the PARTITION clause could not be read as a partition spec"));
    }
    List<PartitionSpec> parts = ScalaInterop.list(((DropPartitions) plan).parts());
    if (parts.size() != 1 || !(parts.get(0) instanceof UnresolvedPartitionSpec)) {
      throw parseError(sql, open.start, "_LEGACY_ERROR_TEMP_0035",
          params("message", "the PARTITION clause must hold exactly one partition spec"));
    }
    Map<String, String> spec = ScalaInterop.map(((UnresolvedPartitionSpec) parts.get(0)).spec());
    // Keep the order written (Spark's Map forgets it beyond four keys): ordered by first mention.
    List<String[]> pairs = new ArrayList<>();
    List<String> order = keysInTextOrder(open, close);
    for (String key : order) {
      if (spec.containsKey(key)) {
        pairs.add(new String[] {key, spec.get(key)});
      }
    }
    for (Map.Entry<String, String> e : spec.entrySet()) {
      if (!order.contains(e.getKey())) {
        pairs.add(new String[] {e.getKey(), e.getValue()});
      }
    }
    return pairs;
  }

  /** The column names of a spec in written order (best effort; Spark's map is authoritative). */
  private List<String> keysInTextOrder(Tok open, Tok close) {
    List<String> keys = new ArrayList<>();
    Lexer inner = new Lexer(sql.substring(open.end, close.start));
    try {
      boolean expectKey = true;
      int depth = 0;
      for (int i = 0; ; i++) {
        Tok t = inner.peek(i);
        if (t.kind == Kind.EOF) {
          break;
        }
        if (t.isSymbol('(')) {
          depth++;
        } else if (t.isSymbol(')')) {
          depth--;
        } else if (depth == 0 && t.isSymbol(',')) {
          expectKey = true;
        } else if (expectKey && depth == 0) {
          expectKey = false;
          if (t.kind == Kind.WORD) {
            keys.add(t.text);
          } else if (t.kind == Kind.QUOTED_IDENT) {
            keys.add(t.text.substring(1, t.text.length() - 1).replace("``", "`"));
          }
        }
      }
    } catch (LexError e) {
      // Spark already accepted the text; order is cosmetic.
    }
    return keys;
  }

  private String mode(String expected) throws ParseException {
    Tok t = peek();
    if (t.isWord("SHARED") || t.isWord("EXCLUSIVE")) {
      next();
      return t.text.toUpperCase(java.util.Locale.ROOT);
    }
    throw syntaxError(t, "expected " + expected);
  }

  private boolean optionalWord(String word) {
    if (peek().isWord(word)) {
      next();
      return true;
    }
    return false;
  }

  private void expectEnd(String expected) throws ParseException {
    if (!atEnd(pos)) {
      throw syntaxError(peek(), "expected " + expected);
    }
  }

  /** Only semicolons (and comments/whitespace, which the lexer skips) from token i on. */
  private boolean atEnd(int i) {
    while (lexer.peek(i).isSymbol(';')) {
      i++;
    }
    return lexer.peek(i).kind == Kind.EOF;
  }

  private Tok peek() {
    return lexer.peek(pos);
  }

  private Tok next() {
    return lexer.peek(pos++);
  }

  /** The statement from its first to its last token (no comments or semicolons around it). */
  private String statementText() {
    return sql.substring(lexer.peek(0).start, lexer.peek(pos - 1).end);
  }

  private ParseException syntaxError(Tok at, String hint) {
    String near = at.kind == Kind.EOF ? "end of input" : "'" + at.text + "'";
    return parseError(sql, at.start, "PARSE_SYNTAX_ERROR",
        params("error", near, "hint", ": " + hint));
  }
}
