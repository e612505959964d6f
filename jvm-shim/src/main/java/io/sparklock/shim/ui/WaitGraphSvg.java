package io.sparklock.shim.ui;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The wait-for graph as an inline SVG, drawn on the server: one box per owner (a session of this
 * application, or another application's statement), one arrow per wait from the waiter to the
 * holder, labelled with the object and the modes; the edges and boxes of a deadlock's cycle in
 * red. The boxes sit on a circle, so a cycle reads as one.
 */
final class WaitGraphSvg {
  /** More owners than this are not drawn (the tables list them all). */
  static final int MAX_NODES = 24;
  private static final double BOX_W = 190;
  private static final double BOX_H = 42;
  private static final String RED = "#c00";

  private WaitGraphSvg() {}

  /** The graph of {@code edges}; {@code sessions} (the snapshot's) give each box its user. */
  static String render(JsonNode edges, JsonNode deadlocks, JsonNode sessions) {
    if (edges == null || edges.isEmpty()) {
      return "<p class=\"text-muted\" id=\"sl-graph-empty\">No waits: nothing to draw.</p>";
    }
    Map<String, double[]> nodes = new LinkedHashMap<>();
    for (JsonNode e : edges) {
      nodes.putIfAbsent(e.path("waiter").asText(), null);
      nodes.putIfAbsent(e.path("holder").asText(), null);
    }
    Set<String> deadNodes = new HashSet<>();
    Set<String> deadEdges = new HashSet<>();
    for (JsonNode d : deadlocks) {
      for (JsonNode e : d.path("edges")) {
        deadNodes.add(e.path("waiter").asText());
        deadEdges.add(key(e));
      }
    }
    Map<String, String> users = new HashMap<>();
    for (JsonNode r : sessions) {
      users.put(r.path("owner").asText(), r.path("user").asText());
    }
    List<String> names = new ArrayList<>(nodes.keySet());
    int n = Math.min(names.size(), MAX_NODES);
    double radius = n <= 1 ? 0 : n == 2 ? 270 : Math.max(170, n * 46);
    double width = 2 * radius + BOX_W + 80;
    double height = (n <= 2 ? BOX_H + 170 : 2 * radius + BOX_H + 80);
    for (int i = 0; i < n; i++) {
      double angle = n <= 2 ? Math.PI * i : -Math.PI / 2 + 2 * Math.PI * i / n;
      nodes.put(names.get(i), new double[] {width / 2 + radius * Math.cos(angle),
          height / 2 + (n <= 2 ? 0 : radius * Math.sin(angle))});
    }
    StringBuilder b = new StringBuilder(4096);
    b.append("<svg id=\"sl-graph\" xmlns=\"http://www.w3.org/2000/svg\" width=\"")
        .append(num(width)).append("\" height=\"").append(num(height)).append("\" viewBox=\"0 0 ")
        .append(num(width)).append(' ').append(num(height))
        .append("\" font-family=\"sans-serif\" font-size=\"12\" role=\"img\">")
        .append("<title>Who waits for whom</title><defs>")
        .append(marker("sl-arrow", "#555")).append(marker("sl-arrow-red", RED)).append("</defs>");
    Set<String> pairs = new HashSet<>();
    for (JsonNode e : edges) {
      pairs.add(e.path("waiter").asText() + "\u0000" + e.path("holder").asText());
    }
    for (JsonNode e : edges) {
      double[] from = nodes.get(e.path("waiter").asText());
      double[] to = nodes.get(e.path("holder").asText());
      if (from == null || to == null) {
        continue;
      }
      boolean back = pairs.contains(e.path("holder").asText() + "\u0000" + e.path("waiter").asText());
      edge(b, e, from, to, back, deadEdges.contains(key(e)));
    }
    for (int i = 0; i < n; i++) {
      String name = names.get(i);
      box(b, name, users.getOrDefault(name, ""), nodes.get(name), deadNodes.contains(name));
    }
    if (names.size() > n) {
      b.append("<text x=\"10\" y=\"").append(num(height - 10)).append("\">")
          .append(names.size() - n).append(" more owners not drawn</text>");
    }
    if (!deadNodes.isEmpty()) {
      b.append("<text id=\"sl-deadlock\" x=\"10\" y=\"20\" fill=\"").append(RED)
          .append("\" font-weight=\"bold\">Deadlock: ").append(deadlocks.size())
          .append(deadlocks.size() == 1 ? " cycle" : " cycles").append(" (in red)</text>");
    }
    return b.append("</svg>").toString();
  }

  private static void edge(StringBuilder b, JsonNode e, double[] from, double[] to, boolean back,
      boolean dead) {
    double dx = to[0] - from[0];
    double dy = to[1] - from[1];
    double len = Math.max(1, Math.hypot(dx, dy));
    // two waits between the same owners, one each way: bend both so neither hides the other
    double bend = back ? 40 : 0;
    double cx = (from[0] + to[0]) / 2 - dy / len * bend;
    double cy = (from[1] + to[1]) / 2 + dx / len * bend;
    double[] start = border(from, cx - from[0], cy - from[1]);
    double[] end = border(to, cx - to[0], cy - to[1]);
    String color = dead ? RED : "#555";
    b.append("<g class=\"").append(dead ? "sl-edge sl-deadlock-edge" : "sl-edge").append("\">")
        .append("<path d=\"M").append(num(start[0])).append(',').append(num(start[1]))
        .append(" Q").append(num(cx)).append(',').append(num(cy)).append(' ')
        .append(num(end[0])).append(',').append(num(end[1])).append("\" fill=\"none\" stroke=\"")
        .append(color).append("\" stroke-width=\"").append(dead ? "2.5" : "1.5")
        .append("\" marker-end=\"url(#").append(dead ? "sl-arrow-red" : "sl-arrow")
        .append(")\"/>");
    // the label sits off its own curve, on the side it bends to (above a straight arrow)
    double off = back ? 14 : 0;
    double lx = (start[0] + 2 * cx + end[0]) / 4 - dy / len * off;
    double ly = (start[1] + 2 * cy + end[1]) / 4 + dx / len * off + (back ? 4 : -4);
    String label = e.path("mode").asText() + " " + e.path("object").asText()
        + " (held " + e.path("holderMode").asText() + ")";
    b.append("<text x=\"").append(num(lx)).append("\" y=\"").append(num(ly))
        .append("\" text-anchor=\"middle\" fill=\"").append(color).append("\">")
        .append(Html.cut(label, 60)).append("</text></g>");
  }

  private static void box(StringBuilder b, String name, String user, double[] at,
      boolean dead) {
    String shown = name.matches("[0-9a-f]{8}-[0-9a-f-]{27}") ? "session " + name.substring(0, 8)
        : name;
    b.append("<g class=\"sl-node\"><title>").append(Html.esc(name)).append("</title>")
        .append("<rect x=\"").append(num(at[0] - BOX_W / 2)).append("\" y=\"")
        .append(num(at[1] - BOX_H / 2)).append("\" width=\"").append(num(BOX_W))
        .append("\" height=\"").append(num(BOX_H)).append("\" rx=\"6\" fill=\"")
        .append(dead ? "#fde8e8" : "#eef4fb").append("\" stroke=\"").append(dead ? RED : "#36c")
        .append("\" stroke-width=\"").append(dead ? "2.5" : "1.2").append("\"/>")
        .append("<text x=\"").append(num(at[0])).append("\" y=\"")
        .append(num(at[1] + (user.isEmpty() ? 4 : -3))).append("\" text-anchor=\"middle\">")
        .append(Html.cut(shown, 28)).append("</text>");
    if (!user.isEmpty()) {
      b.append("<text x=\"").append(num(at[0])).append("\" y=\"").append(num(at[1] + 12))
          .append("\" text-anchor=\"middle\" fill=\"#555\">user ").append(Html.cut(user, 22))
          .append("</text>");
    }
    b.append("</g>");
  }

  /** Where a line from the box's centre towards (dx, dy) leaves the box. */
  private static double[] border(double[] c, double dx, double dy) {
    double tx = dx == 0 ? Double.MAX_VALUE : (BOX_W / 2 + 4) / Math.abs(dx);
    double ty = dy == 0 ? Double.MAX_VALUE : (BOX_H / 2 + 4) / Math.abs(dy);
    double t = Math.min(1, Math.min(tx, ty));
    return new double[] {c[0] + dx * t, c[1] + dy * t};
  }

  private static String marker(String id, String color) {
    return "<marker id=\"" + id + "\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" "
        + "markerWidth=\"8\" markerHeight=\"8\" orient=\"auto-start-reverse\"><path "
        + "d=\"M0,0 L10,5 L0,10 z\" fill=\"" + color + "\"/></marker>";
  }

  private static String key(JsonNode e) {
    return e.path("waiter").asText() + "\u0000" + e.path("holder").asText() + "\u0000"
        + e.path("object").asText();
  }

  private static String num(double v) {
    return String.format(Locale.ROOT, "%.1f", v);
  }
}
