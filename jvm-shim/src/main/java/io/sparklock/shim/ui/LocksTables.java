package io.sparklock.shim.ui;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;

/**
 * The page's tables, one method per section, each read from its part of the snapshot
 * ({@code sparklock/service/snapshot.py} names the fields). Each table has an id the browser
 * test and the docs refer to.
 */
final class LocksTables {
  private static final int QUERY_CHARS = 300;

  private LocksTables() {}

  static void sessions(StringBuilder b, JsonNode rows) {
    b.append("<h4>Sessions</h4>");
    if (empty(b, rows, "No session of this application holds or waits for a lock.")) {
      return;
    }
    head(b, "sl-sessions", "Session", "User", "Application / agent", "Client", "Held",
        "Waiting", "Since");
    for (JsonNode r : rows) {
      b.append(r.path("waiting").asLong() > 0 ? "<tr class=\"sl-wait\">" : "<tr>");
      cells(b, owner(r.path("owner").asText()), Html.esc(r.path("user").asText()),
          Html.esc(r.path("agent").asText()), Html.esc(r.path("client").asText()),
          String.valueOf(r.path("held").asLong()), String.valueOf(r.path("waiting").asLong()),
          time(r.path("sinceMs").asLong()));
      b.append("</tr>");
    }
    b.append("</tbody></table>");
  }

  static void waiting(StringBuilder b, JsonNode rows) {
    b.append("<h4>Waiting</h4>");
    if (empty(b, rows, "Nothing waits for a lock.")) {
      return;
    }
    head(b, "sl-waiting", "Object", "Mode", "Session", "Query", "Waiting for", "Waits behind");
    for (JsonNode r : rows) {
      StringBuilder behind = new StringBuilder();
      for (JsonNode h : r.path("blockedBy")) {
        behind.append("<div>").append(Html.esc(h.path("mode").asText())).append(" on ")
            .append(Html.esc(h.path("object").asText())).append(" held by ")
            .append(holder(h)).append("</div>");
      }
      b.append("<tr class=\"sl-wait\">");
      cells(b, Html.esc(r.path("object").asText()), Html.esc(r.path("mode").asText()),
          owner(r.path("owner").asText()), query(r), Html.duration(r.path("forMs").asLong()),
          behind.toString());
      b.append("</tr>");
    }
    b.append("</tbody></table>");
  }

  static void blockers(StringBuilder b, JsonNode rows) {
    b.append("<h4>Holders waited behind</h4>");
    if (empty(b, rows, "No one is in the way.")) {
      return;
    }
    head(b, "sl-blockers", "Object", "Mode", "Holder", "User", "Application / agent", "Client",
        "Query", "Held for");
    for (JsonNode r : rows) {
      b.append("<tr>");
      cells(b, Html.esc(r.path("object").asText()), Html.esc(r.path("mode").asText()),
          owner(r.path("owner").asText())
              + (r.path("ours").asBoolean() ? " (this application)" : ""),
          Html.esc(r.path("user").asText()), Html.esc(r.path("agent").asText()),
          Html.esc(r.path("client").asText()), query(r), Html.duration(r.path("forMs").asLong()));
      b.append("</tr>");
    }
    b.append("</tbody></table>");
  }

  static void held(StringBuilder b, JsonNode rows, long truncated) {
    b.append("<h4>Held</h4>");
    if (empty(b, rows, "This application holds no lock.")) {
      return;
    }
    head(b, "sl-held", "Object", "Mode", "Type", "Session", "Query", "Held for");
    for (JsonNode r : rows) {
      b.append("<tr>");
      cells(b, Html.esc(r.path("object").asText()), Html.esc(r.path("mode").asText()),
          Html.esc(r.path("type").asText()), owner(r.path("owner").asText()), query(r),
          Html.duration(r.path("forMs").asLong()));
      b.append("</tr>");
    }
    b.append("</tbody></table>");
    if (truncated > 0) {
      b.append("<p>").append(truncated).append(" more rows not shown (see the JSON).</p>");
    }
  }

  static void recent(StringBuilder b, JsonNode rows) {
    b.append("<h4>Recent waits and refusals</h4>");
    if (empty(b, rows, "No statement has waited yet.")) {
      return;
    }
    head(b, "sl-recent", "Ended", "Query id", "Outcome", "Waited for", "Waited", "Behind",
        "Error");
    for (JsonNode r : rows) {
      String outcome = r.path("outcome").asText();
      StringBuilder behind = new StringBuilder();
      for (JsonNode h : r.path("holders")) {
        behind.append("<div>").append(holder(h)).append("</div>");
      }
      b.append("GRANTED".equals(outcome) ? "<tr>" : "<tr class=\"sl-wait\">");
      cells(b, time(r.path("endedMs").asLong()), Html.esc(r.path("queryId").asText()),
          Html.esc(outcome),
          Html.esc(r.path("mode").asText() + " " + r.path("object").asText()),
          Html.duration(r.path("waitedMs").asLong()), behind.toString(),
          Html.cut(r.path("error").asText(), QUERY_CHARS));
      b.append("</tr>");
    }
    b.append("</tbody></table>");
  }

  /** Who holds a lock: user, application or agent, client and its statement. */
  private static String holder(JsonNode h) {
    StringBuilder s = new StringBuilder();
    String user = h.path("user").asText();
    s.append("<span class=\"sl-holder\">").append(user.isEmpty() ? "?" : Html.esc(user))
        .append(" @ ").append(Html.esc(h.path("agent").asText()));
    String client = h.path("client").asText();
    if (!client.isEmpty()) {
      s.append(" from ").append(Html.esc(client));
    }
    s.append("</span> (query ").append(Html.esc(h.path("queryId").asText()));
    String q = h.path("query").asText();
    if (!q.isEmpty()) {
      s.append(": <code>").append(Html.cut(q, 120)).append("</code>");
    }
    return s.append(')').toString();
  }

  private static String query(JsonNode r) {
    return "<span title=\"" + Html.esc(r.path("queryId").asText()) + "\">"
        + Html.cut(r.path("query").asText(), QUERY_CHARS) + "</span>";
  }

  /** A session id shortened (its full id on hover); other owners as they are. */
  static String owner(String id) {
    String shown = id.matches("[0-9a-f]{8}-[0-9a-f-]{27}") ? "session " + id.substring(0, 8) : id;
    return "<span title=\"" + Html.esc(id) + "\">" + Html.cut(shown, 60) + "</span>";
  }

  private static String time(long ms) {
    return ms <= 0 ? "" : Instant.ofEpochMilli(ms).toString().replace('T', ' ');
  }

  private static boolean empty(StringBuilder b, JsonNode rows, String text) {
    if (rows == null || rows.isEmpty()) {
      b.append("<p class=\"text-muted\">").append(text).append("</p>");
      return true;
    }
    return false;
  }

  private static void head(StringBuilder b, String id, String... columns) {
    b.append("<table id=\"").append(id)
        .append("\" class=\"table table-bordered table-sm table-striped\"><thead><tr>");
    for (String c : columns) {
      b.append("<th>").append(Html.esc(c)).append("</th>");
    }
    b.append("</tr></thead><tbody>");
  }

  private static void cells(StringBuilder b, String... html) {
    for (String h : html) {
      b.append("<td>").append(h).append("</td>");
    }
  }
}
