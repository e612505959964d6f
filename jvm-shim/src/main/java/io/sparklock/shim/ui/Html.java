package io.sparklock.shim.ui;

import java.time.Duration;

/** Text made safe for HTML and SVG, and the short durations the tables show. */
final class Html {
  private Html() {}

  static String esc(String s) {
    if (s == null) {
      return "";
    }
    StringBuilder b = new StringBuilder(s.length() + 16);
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '<' -> b.append("&lt;");
        case '>' -> b.append("&gt;");
        case '&' -> b.append("&amp;");
        case '"' -> b.append("&quot;");
        case '\'' -> b.append("&#39;");
        default -> b.append(c);
      }
    }
    return b.toString();
  }

  /** {@code 850 ms}, {@code 12.3 s}, {@code 4 min 2 s}, {@code 3 h 10 min}. */
  static String duration(long ms) {
    if (ms < 1000) {
      return ms + " ms";
    }
    if (ms < 60_000) {
      return String.format("%.1f s", ms / 1000.0);
    }
    Duration d = Duration.ofMillis(ms);
    if (ms < 3_600_000) {
      return d.toMinutes() + " min " + d.toSecondsPart() + " s";
    }
    return d.toHours() + " h " + d.toMinutesPart() + " min";
  }

  /** {@code s} cut to {@code n} characters (with an ellipsis), escaped. */
  static String cut(String s, int n) {
    String t = s == null ? "" : s;
    return esc(t.length() <= n ? t : t.substring(0, n) + "…");
  }
}
