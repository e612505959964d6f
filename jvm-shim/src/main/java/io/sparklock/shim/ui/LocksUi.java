package io.sparklock.shim.ui;

import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;
import org.apache.spark.SparkContext;
import org.apache.spark.ui.SparkUI;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Puts the Locks tab into a SparkContext's live UI, once per context. Python's attach calls it;
 * a context without a UI ({@code spark.ui.enabled=false}) gets none, and a UI that cannot take
 * the tab costs a WARN line, never the user's session.
 */
public final class LocksUi {
  private static final Logger LOG = LoggerFactory.getLogger("io.sparklock.shim.ui.LocksUi");
  private static final Map<SparkContext, Boolean> ATTACHED =
      Collections.synchronizedMap(new WeakHashMap<>());

  private LocksUi() {}

  /** Attaches the tab to {@code sc}'s UI (idempotent); whether the context has it now. */
  public static boolean attach(SparkContext sc) {
    if (sc == null || sc.ui().isEmpty()) {
      return false;
    }
    synchronized (ATTACHED) {
      Boolean done = ATTACHED.get(sc);
      if (done != null) {
        return done;
      }
      boolean ok = false;
      try {
        SparkUI ui = sc.ui().get();
        LocksServlet.attach(ui, "/" + LocksTab.PREFIX, new LocksPage(sc, ui));
        ui.attachTab(new LocksTab(ui));
        ok = true;
      } catch (RuntimeException | LinkageError e) {
        LOG.warn("sparklock: the Locks tab could not be added to the Spark UI: {}", e.toString());
      }
      ATTACHED.put(sc, ok);
      return ok;
    }
  }
}
