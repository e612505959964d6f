package io.sparklock.shim.statements;

import java.util.ArrayList;
import java.util.List;

/**
 * The tokens of a lock statement, on demand: words, backquoted identifiers, string literals
 * (single or double quoted, backslash escapes, R'raw'), single-character symbols; whitespace,
 * {@code --} and nested bracketed comments skipped. Only enough to find a lock statement's head
 * and the spans of its pieces: Spark's own parser reads identifiers, specs and statements.
 */
final class SqlLexer {
  private SqlLexer() {}

  enum Kind { WORD, QUOTED_IDENT, STRING, SYMBOL, EOF }

  static final class Tok {
    final Kind kind;
    final int start;
    final int end;
    final String text;

    Tok(Kind kind, int start, int end, String text) {
      this.kind = kind;
      this.start = start;
      this.end = end;
      this.text = text;
    }

    boolean isWord(String word) {
      return kind == Kind.WORD && text.equalsIgnoreCase(word);
    }

    boolean isSymbol(char c) {
      return kind == Kind.SYMBOL && text.charAt(0) == c;
    }

    /** A token that can be (part of) an identifier; Spark decides whether it really is one. */
    boolean isIdentifierPart() {
      return kind == Kind.WORD || kind == Kind.QUOTED_IDENT
          || (kind == Kind.STRING && text.startsWith("\""));
    }
  }

  static final class LexError extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final int offset;
    final String near;

    LexError(String message, int offset, String near) {
      super(message);
      this.offset = offset;
      this.near = near;
    }
  }

  /**
   * Tokens on demand: words, backquoted identifiers, string literals (single or double quoted,
   * backslash escapes, R'raw'), single-character symbols. Whitespace and comments are skipped.
   */
  static final class Lexer {
    private final String s;
    private final List<Tok> tokens = new ArrayList<>();
    private int i = 0;

    Lexer(String s) {
      this.s = s;
    }

    Tok peek(int index) {
      while (tokens.size() <= index) {
        Tok last = tokens.isEmpty() ? null : tokens.get(tokens.size() - 1);
        if (last != null && last.kind == Kind.EOF) {
          return last;
        }
        tokens.add(scan());
      }
      return tokens.get(index);
    }

    private Tok scan() {
      skipTrivia();
      int n = s.length();
      if (i >= n) {
        return new Tok(Kind.EOF, n, n, "");
      }
      int start = i;
      char c = s.charAt(i);
      if (c == '`') {
        i++;
        while (true) {
          if (i >= n) {
            throw new LexError(
                "unclosed backquoted identifier", start, "'" + s.substring(start) + "'");
          }
          if (s.charAt(i) == '`') {
            if (i + 1 < n && s.charAt(i + 1) == '`') {
              i += 2;
              continue;
            }
            i++;
            break;
          }
          i++;
        }
        return new Tok(Kind.QUOTED_IDENT, start, i, s.substring(start, i));
      }
      if ((c == 'r' || c == 'R') && i + 1 < n
          && (s.charAt(i + 1) == '\'' || s.charAt(i + 1) == '"')) {
        char q = s.charAt(i + 1);
        int close = s.indexOf(q, i + 2);
        if (close < 0) {
          throw new LexError("unclosed string literal", start, "'" + s.substring(start) + "'");
        }
        i = close + 1;
        return new Tok(Kind.STRING, start, i, s.substring(start, i));
      }
      if (c == '\'' || c == '"') {
        i++;
        while (true) {
          if (i >= n) {
            throw new LexError("unclosed string literal", start, "'" + s.substring(start) + "'");
          }
          char d = s.charAt(i);
          if (d == '\\') {
            i += 2;
            continue;
          }
          if (d == c) {
            i++;
            if (i < n && s.charAt(i) == c) { // doubled quote stays inside the literal
              i++;
              continue;
            }
            break;
          }
          i++;
        }
        return new Tok(Kind.STRING, start, i, s.substring(start, i));
      }
      if (isWordChar(c)) {
        while (i < n && isWordChar(s.charAt(i))) {
          i++;
        }
        return new Tok(Kind.WORD, start, i, s.substring(start, i));
      }
      i++;
      return new Tok(Kind.SYMBOL, start, i, s.substring(start, i));
    }

    private void skipTrivia() {
      int n = s.length();
      while (i < n) {
        char c = s.charAt(i);
        if (Character.isWhitespace(c)) {
          i++;
        } else if (c == '-' && i + 1 < n && s.charAt(i + 1) == '-') {
          while (i < n && s.charAt(i) != '\n') {
            i++;
          }
        } else if (c == '/' && i + 1 < n && s.charAt(i + 1) == '*') {
          int start = i;
          int depth = 0;
          while (true) {
            if (i >= n) {
              throw new LexError("unclosed bracketed comment", start, "'/*'");
            }
            if (s.startsWith("/*", i)) {
              depth++;
              i += 2;
            } else if (s.startsWith("*/", i)) {
              depth--;
              i += 2;
              if (depth == 0) {
                break;
              }
            } else {
              i++;
            }
          }
        } else {
          break;
        }
      }
    }

    private static boolean isWordChar(char c) {
      return Character.isLetterOrDigit(c) || c == '_' || (c >= 0x80 && !Character.isWhitespace(c)
          && !Character.isSpaceChar(c));
    }
  }
}
