package io.sparklock.shim.ui;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sparklock.shim.bridge.PythonCalls;
import java.time.Instant;
import org.apache.spark.SparkContext;
import org.apache.spark.ui.SparkUI;
import org.apache.spark.ui.WebUITab;

/**
 * What {@code /locks/} and {@code /locks/json/} answer: the snapshot of this application's locks,
 * asked of Python at each request (one bridge call, nothing computed while nobody looks), as a
 * page in the Spark UI's look or as JSON for tools. The page is plain HTML with the graph as an
 * inline SVG drawn here ({@link WaitGraphSvg}), so it needs no script and reads the same in a
 * proxy, a screenshot or a terminal browser.
 */
final class LocksPage {
  static final ObjectMapper JSON = new ObjectMapper();
  static final int MAX_ROWS = 500;

  /** A response: its content type and body. */
  record Answer(String contentType, String body) {}

  private final SparkContext sc;
  private final SparkUI ui;

  LocksPage(SparkContext sc, SparkUI ui) {
    this.sc = sc;
    this.ui = ui;
  }

  /** The JSON or the page (refreshed every {@code refresh} seconds when given). */
  Answer answer(boolean json, String refresh) {
    if (json) {
      return new Answer("application/json", snapshotText());
    }
    return new Answer("text/html", html(snapshot(), refreshSeconds(refresh)));
  }

  /** The snapshot's JSON text; {"ok":false,"error":...} when Python cannot be asked. */
  String snapshotText() {
    ObjectNode request = JSON.createObjectNode();
    request.put("appId", sc.applicationId());
    request.put("maxRows", MAX_ROWS);
    try {
      return PythonCalls.locksSnapshot(request.toString());
    } catch (RuntimeException e) {
      ObjectNode failed = JSON.createObjectNode();
      failed.put("ok", false);
      failed.put("error", String.valueOf(e.getMessage()));
      return failed.toString();
    }
  }

  JsonNode snapshot() {
    String text = snapshotText();
    try {
      return JSON.readTree(text);
    } catch (java.io.IOException e) {
      ObjectNode failed = JSON.createObjectNode();
      failed.put("ok", false);
      failed.put("error", "unreadable snapshot: " + e.getMessage());
      return failed;
    }
  }

  private static int refreshSeconds(String refresh) {
    try {
      int s = refresh == null ? 0 : Integer.parseInt(refresh.trim());
      return Math.max(0, Math.min(s, 3600));
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /** The whole page: Spark's style sheets and navigation bar, then the sections. */
  String html(JsonNode snap, int refresh) {
    StringBuilder b = new StringBuilder(16_384);
    b.append("<!DOCTYPE html><html><head><meta charset=\"utf-8\">");
    if (refresh > 0) {
      b.append("<meta http-equiv=\"refresh\" content=\"").append(refresh).append("\">");
    }
    b.append("<link rel=\"stylesheet\" href=\"../static/bootstrap.min.css\" type=\"text/css\">")
        .append("<link rel=\"stylesheet\" href=\"../static/webui.css\" type=\"text/css\">")
        .append("<title>").append(Html.esc(sc.appName())).append(" - Locks</title>")
        .append("<style>.sl-wait{background:#fff3cd}.sl-dead{color:#c00;font-weight:bold}")
        .append("td span{overflow-wrap:anywhere}")
        .append("</style></head><body>");
    navbar(b);
    b.append("<div class=\"container-fluid\"><div class=\"row\"><div class=\"col-12\">")
        .append("<h3 style=\"vertical-align: bottom; display: inline-block;\">Locks</h3>")
        .append("</div></div><div class=\"row\"><div class=\"col-12\">");
    summary(b, snap, refresh);
    if (!snap.path("ok").asBoolean(false)) {
      b.append("<div class=\"alert alert-warning\" id=\"sl-error\">The lock service did not ")
          .append("answer: ").append(Html.esc(snap.path("error").asText())).append("</div>");
    } else {
      LocksTables.sessions(b, snap.path("sessions"));
      LocksTables.waiting(b, snap.path("waiting"));
      b.append("<h4 id=\"wait-for-graph\">Who waits for whom</h4>");
      b.append(WaitGraphSvg.render(snap.path("edges"), snap.path("deadlocks"),
          snap.path("sessions")));
      LocksTables.blockers(b, snap.path("blockers"));
      LocksTables.held(b, snap.path("held"), snap.path("truncated").asLong(0));
      LocksTables.recent(b, snap.path("recent"));
    }
    b.append("</div></div></div></body></html>");
    return b.toString();
  }

  private void summary(StringBuilder b, JsonNode snap, int refresh) {
    b.append("<ul class=\"list-unstyled\"><li><strong>Application:</strong> ")
        .append(Html.esc(sc.applicationId())).append("</li><li><strong>Lock managers:</strong> ");
    JsonNode managers = snap.path("managers");
    if (managers.isEmpty()) {
      b.append("none in use yet");
    }
    for (JsonNode m : managers) {
      b.append(Html.esc(m.path("kind").asText()));
      if (!m.path("error").asText().isEmpty()) {
        b.append(" <span class=\"sl-dead\">(unreachable: ")
            .append(Html.esc(m.path("error").asText())).append(")</span>");
      } else {
        b.append(" (").append(m.path("locks").asLong()).append(" locks listed)");
      }
      b.append(' ');
    }
    long at = snap.path("generatedMs").asLong(System.currentTimeMillis());
    b.append("</li><li><strong>As of:</strong> ").append(Instant.ofEpochMilli(at))
        .append(" &middot; ").append(refresh > 0
            ? "refreshing every " + refresh + " s (<a href=\"?\">stop</a>)"
            : "<a href=\"?refresh=2\">refresh every 2 s</a>")
        .append(" &middot; <a href=\"json/\">JSON</a></li></ul>");
  }

  /** Spark's navigation bar: the brand, every tab of this UI (Locks active), the app's name. */
  private void navbar(StringBuilder b) {
    b.append("<nav class=\"navbar navbar-expand-md navbar-light bg-light mb-4\">")
        .append("<div class=\"navbar-header\"><div class=\"navbar-brand\"><a href=\"../\">")
        .append("<strong>Spark</strong> <span class=\"version\">")
        .append(Html.esc(sc.version())).append("</span></a></div></div>")
        .append("<ul class=\"navbar-nav mr-auto me-auto\">");
    scala.collection.Iterator<WebUITab> tabs = ui.getTabs().iterator();
    while (tabs.hasNext()) {
      WebUITab t = tabs.next();
      boolean active = LocksTab.PREFIX.equals(t.prefix());
      b.append("<li class=\"nav-item").append(active ? " active" : "").append("\">")
          .append("<a class=\"nav-link\" href=\"../").append(Html.esc(t.prefix())).append("/\">")
          .append(Html.esc(t.name())).append("</a></li>");
    }
    b.append("</ul><span class=\"navbar-text navbar-right d-none d-md-block\"><strong>")
        .append(Html.esc(sc.appName())).append("</strong> application UI</span></nav>");
  }
}
