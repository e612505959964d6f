package io.sparklock.shim.ui;

import org.apache.spark.ui.SparkUI;
import org.apache.spark.ui.SparkUITab;

/**
 * The "Locks" entry of the Spark UI's navigation bar. It has no Spark pages of its own: its path
 * ({@code /locks/}) is served by {@link LocksServlet} (the servlet type differs per Spark line),
 * which renders {@link LocksPage}. Spark names the tab after its prefix, capitalised.
 */
final class LocksTab extends SparkUITab {
  static final String PREFIX = "locks";

  LocksTab(SparkUI parent) {
    super(parent, PREFIX);
  }
}
