package io.sparklock.shim.ui;

import java.io.IOException;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;
import org.apache.spark.ui.SparkUI;

/** The Locks tab's servlet on Spark 3.5 ({@code javax.servlet}): the page and its JSON. */
final class LocksServlet extends HttpServlet {
  private final transient LocksPage page;
  private final boolean json;

  private LocksServlet(LocksPage page, boolean json) {
    this.page = page;
    this.json = json;
  }

  /** The page at {@code path}, its JSON at {@code path/json} (a context of its own, as Spark's). */
  static void attach(SparkUI ui, String path, LocksPage page) {
    ui.attachHandler(path, new LocksServlet(page, false), "");
    ui.attachHandler(path + "/json", new LocksServlet(page, true), "");
  }

  @Override
  protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
    LocksPage.Answer a = page.answer(json, req.getParameter("refresh"));
    resp.setContentType(a.contentType());
    resp.setCharacterEncoding("UTF-8");
    resp.setHeader("Cache-Control", "no-store");
    resp.setStatus(HttpServletResponse.SC_OK);
    resp.getWriter().write(a.body());
  }
}
