package io.sparklock.shim;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small JSON writer and reader, enough for the bridge (no dependency beyond the JDK).
 *
 * <p>Writing accepts {@code null}, {@link String}, {@link Number}, {@link Boolean}, {@link Map}
 * (keys written with {@code toString()}), {@link Iterable} and arrays of objects. Reading returns
 * {@code null}, {@link String}, {@link Long} or {@link Double}, {@link Boolean},
 * {@link LinkedHashMap} and {@link ArrayList}.
 */
public final class Json {
  private Json() {}

  // ---------------------------------------------------------------- writing

  public static String write(Object value) {
    StringBuilder sb = new StringBuilder(128);
    write(sb, value);
    return sb.toString();
  }

  public static void write(StringBuilder sb, Object value) {
    if (value == null) {
      sb.append("null");
    } else if (value instanceof String) {
      quote(sb, (String) value);
    } else if (value instanceof Boolean) {
      sb.append(((Boolean) value).booleanValue() ? "true" : "false");
    } else if (value instanceof Double || value instanceof Float) {
      double d = ((Number) value).doubleValue();
      if (Double.isNaN(d) || Double.isInfinite(d)) {
        sb.append("null");
      } else {
        sb.append(d);
      }
    } else if (value instanceof Number) {
      sb.append(value.toString());
    } else if (value instanceof Map) {
      sb.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : ((Map<?, ?>) value).entrySet()) {
        if (!first) {
          sb.append(',');
        }
        first = false;
        quote(sb, String.valueOf(e.getKey()));
        sb.append(':');
        write(sb, e.getValue());
      }
      sb.append('}');
    } else if (value instanceof Iterable) {
      sb.append('[');
      boolean first = true;
      for (Object o : (Iterable<?>) value) {
        if (!first) {
          sb.append(',');
        }
        first = false;
        write(sb, o);
      }
      sb.append(']');
    } else if (value instanceof Object[]) {
      sb.append('[');
      Object[] arr = (Object[]) value;
      for (int i = 0; i < arr.length; i++) {
        if (i > 0) {
          sb.append(',');
        }
        write(sb, arr[i]);
      }
      sb.append(']');
    } else {
      quote(sb, value.toString());
    }
  }

  public static void quote(StringBuilder sb, String s) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"':
          sb.append("\\\"");
          break;
        case '\\':
          sb.append("\\\\");
          break;
        case '\n':
          sb.append("\\n");
          break;
        case '\r':
          sb.append("\\r");
          break;
        case '\t':
          sb.append("\\t");
          break;
        case '\b':
          sb.append("\\b");
          break;
        case '\f':
          sb.append("\\f");
          break;
        default:
          if (c < 0x20 || c == 0x2028 || c == 0x2029) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
      }
    }
    sb.append('"');
  }

  // ---------------------------------------------------------------- reading

  /** Parses one JSON value; throws {@link IllegalArgumentException} on malformed text. */
  public static Object parse(String text) {
    if (text == null) {
      throw new IllegalArgumentException("JSON text is null");
    }
    Reader r = new Reader(text);
    r.ws();
    Object v = r.value();
    r.ws();
    if (r.pos != text.length()) {
      throw r.error("trailing characters");
    }
    return v;
  }

  /** Parses a JSON object; throws {@link IllegalArgumentException} when it is not one. */
  @SuppressWarnings("unchecked")
  public static Map<String, Object> parseObject(String text) {
    Object v = parse(text);
    if (!(v instanceof Map)) {
      throw new IllegalArgumentException("expected a JSON object, got: " + abbreviate(text));
    }
    return (Map<String, Object>) v;
  }

  static String abbreviate(String s) {
    if (s == null) {
      return "null";
    }
    return s.length() <= 200 ? s : s.substring(0, 200) + "...";
  }

  private static final class Reader {
    final String s;
    int pos;

    Reader(String s) {
      this.s = s;
    }

    IllegalArgumentException error(String what) {
      return new IllegalArgumentException(
          "malformed JSON at offset " + pos + " (" + what + "): " + abbreviate(s));
    }

    void ws() {
      while (pos < s.length()) {
        char c = s.charAt(pos);
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
          pos++;
        } else {
          break;
        }
      }
    }

    Object value() {
      if (pos >= s.length()) {
        throw error("unexpected end");
      }
      char c = s.charAt(pos);
      switch (c) {
        case '{':
          return object();
        case '[':
          return array();
        case '"':
          return string();
        case 't':
          literal("true");
          return Boolean.TRUE;
        case 'f':
          literal("false");
          return Boolean.FALSE;
        case 'n':
          literal("null");
          return null;
        default:
          if (c == '-' || (c >= '0' && c <= '9')) {
            return number();
          }
          throw error("unexpected character '" + c + "'");
      }
    }

    void literal(String word) {
      if (!s.startsWith(word, pos)) {
        throw error("expected " + word);
      }
      pos += word.length();
    }

    Map<String, Object> object() {
      Map<String, Object> m = new LinkedHashMap<>();
      pos++;
      ws();
      if (pos < s.length() && s.charAt(pos) == '}') {
        pos++;
        return m;
      }
      while (true) {
        ws();
        if (pos >= s.length() || s.charAt(pos) != '"') {
          throw error("expected a key");
        }
        String key = string();
        ws();
        if (pos >= s.length() || s.charAt(pos) != ':') {
          throw error("expected ':'");
        }
        pos++;
        ws();
        m.put(key, value());
        ws();
        if (pos >= s.length()) {
          throw error("unexpected end in object");
        }
        char c = s.charAt(pos++);
        if (c == '}') {
          return m;
        }
        if (c != ',') {
          throw error("expected ',' or '}'");
        }
      }
    }

    List<Object> array() {
      List<Object> l = new ArrayList<>();
      pos++;
      ws();
      if (pos < s.length() && s.charAt(pos) == ']') {
        pos++;
        return l;
      }
      while (true) {
        ws();
        l.add(value());
        ws();
        if (pos >= s.length()) {
          throw error("unexpected end in array");
        }
        char c = s.charAt(pos++);
        if (c == ']') {
          return l;
        }
        if (c != ',') {
          throw error("expected ',' or ']'");
        }
      }
    }

    String string() {
      StringBuilder sb = new StringBuilder();
      pos++;
      while (true) {
        if (pos >= s.length()) {
          throw error("unterminated string");
        }
        char c = s.charAt(pos++);
        if (c == '"') {
          return sb.toString();
        }
        if (c != '\\') {
          sb.append(c);
          continue;
        }
        if (pos >= s.length()) {
          throw error("unterminated escape");
        }
        char e = s.charAt(pos++);
        switch (e) {
          case '"':
          case '\\':
          case '/':
            sb.append(e);
            break;
          case 'n':
            sb.append('\n');
            break;
          case 'r':
            sb.append('\r');
            break;
          case 't':
            sb.append('\t');
            break;
          case 'b':
            sb.append('\b');
            break;
          case 'f':
            sb.append('\f');
            break;
          case 'u':
            if (pos + 4 > s.length()) {
              throw error("short unicode escape");
            }
            try {
              sb.append((char) Integer.parseInt(s.substring(pos, pos + 4), 16));
            } catch (NumberFormatException ex) {
              throw error("bad unicode escape");
            }
            pos += 4;
            break;
          default:
            throw error("bad escape");
        }
      }
    }

    Object number() {
      int start = pos;
      if (s.charAt(pos) == '-') {
        pos++;
      }
      boolean integral = true;
      while (pos < s.length()) {
        char c = s.charAt(pos);
        if (c >= '0' && c <= '9') {
          pos++;
        } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
          integral = false;
          pos++;
        } else {
          break;
        }
      }
      String t = s.substring(start, pos);
      try {
        if (integral) {
          try {
            return Long.parseLong(t);
          } catch (NumberFormatException big) {
            return Double.parseDouble(t);
          }
        }
        return Double.parseDouble(t);
      } catch (NumberFormatException ex) {
        throw error("bad number");
      }
    }
  }

  /** Convenience for building ordered objects: {@code Json.obj("a", 1, "b", "x")}. */
  public static Map<String, Object> obj(Object... keyValues) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i + 1 < keyValues.length; i += 2) {
      m.put(String.valueOf(keyValues[i]), keyValues[i + 1]);
    }
    return m;
  }

  /** Iterates a Java list view of any Iterable (for callers holding raw objects). */
  static Iterator<?> iterate(Object o) {
    return ((Iterable<?>) o).iterator();
  }
}
