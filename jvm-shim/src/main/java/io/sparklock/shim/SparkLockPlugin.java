package io.sparklock.shim;

import io.sparklock.shim.telemetry.LockMetrics;
import java.util.Collections;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * {@code spark.plugins=io.sparklock.shim.SparkLockPlugin} ({@code sparklock.configure(builder)}
 * adds it): registers the {@code sparklock} metric source ({@link LockMetrics}) with the driver's
 * metrics system when the application starts. Driver only: locks are taken on the driver.
 */
public final class SparkLockPlugin implements SparkPlugin {
  @Override
  public DriverPlugin driverPlugin() {
    return new Driver();
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return null;
  }

  /** The driver side: the source is registered once the application id is known. */
  static final class Driver implements DriverPlugin {
    private SparkContext sc;

    @Override
    public Map<String, String> init(SparkContext sc, PluginContext ctx) {
      this.sc = sc;
      return Collections.emptyMap();
    }

    @Override
    public void registerMetrics(String appId, PluginContext ctx) {
      LockMetrics.of(sc);
    }
  }
}
