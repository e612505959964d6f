package io.sparklock.shim.telemetry;

import com.codahale.metrics.Counter;
import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import com.codahale.metrics.Timer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.SparkContext;
import org.apache.spark.metrics.source.Source;

/**
 * The {@code sparklock} metric source of one Spark application (README "Metrics"): Dropwizard
 * metrics registered with the driver's metrics system, so every configured sink shows them (the
 * UI's {@code /metrics/json/}, {@code /metrics/prometheus/}, JMX, ...) as
 * {@code <app id>.driver.sparklock.<name>}.
 *
 * <p>Spark's metrics system copies a source's metrics when the source is registered, so every
 * metric is created here, up front. One instance per SparkContext ({@link #of}): figures start
 * at zero with each application, also when several contexts follow each other in one JVM.
 */
public final class LockMetrics implements Source {
  public static final String SOURCE_NAME = "sparklock";

  private static volatile LockMetrics current = new LockMetrics(null);

  private final MetricRegistry registry = new MetricRegistry();
  /** The context whose metrics system shows this source (null: not registered yet). */
  private volatile SparkContext registeredWith;

  final Timer lockWaitTime = registry.timer("lockWaitTime");
  final Timer lockHoldTime = registry.timer("lockHoldTime");
  final Counter acquisitions = registry.counter("acquisitions");
  final Counter conflicts = registry.counter("conflicts");
  final Counter cancelledWaits = registry.counter("cancelledWaits");
  final Counter deadlocks = registry.counter("deadlocks");
  final Counter failedAcquisitions = registry.counter("failedAcquisitions");
  final Counter releases = registry.counter("releases");
  final Counter releasesRetried = registry.counter("releasesRetried");
  final Counter locksLost = registry.counter("locksLost");
  final AtomicLong locksHeld = gauge("locksHeld", 0);
  final AtomicLong waiting = gauge("waiting", 0);
  /** A backend's state gauges (its connection, ...), by name, made when Python first reports one. */
  private final Map<String, AtomicLong> backendStates = new ConcurrentHashMap<>();

  private LockMetrics(SparkContext sc) {
    this.registeredWith = sc;
  }

  private AtomicLong gauge(String name, long initial) {
    AtomicLong value = new AtomicLong(initial);
    registry.register(name, (Gauge<Long>) value::get);
    return value;
  }

  @Override
  public String sourceName() {
    return SOURCE_NAME;
  }

  @Override
  public MetricRegistry metricRegistry() {
    return registry;
  }

  /** The figures of the running application (counting goes here). */
  static LockMetrics current() {
    return current;
  }

  /**
   * Registers the source of {@code sc}'s application with its metrics system, once (idempotent):
   * the plugin calls it when the application starts; Python's attach calls it too, for a context
   * started without the plugin (pyspark's {@code remote("local")} sets {@code spark.plugins}
   * itself). A new context gets fresh figures.
   */
  public static synchronized LockMetrics of(SparkContext sc) {
    LockMetrics m = current;
    if (m.registeredWith == sc) {
      return m;
    }
    if (m.registeredWith != null) {
      m = new LockMetrics(null); // a previous application's figures stay with it
    }
    m.registeredWith = sc;
    sc.env().metricsSystem().registerSource(m);
    current = m;
    return m;
  }

  /** The snapshot of every counter and gauge, by name (tests, debugging). */
  public java.util.Map<String, Long> counts() {
    java.util.Map<String, Long> out = new java.util.TreeMap<>();
    registry.getCounters().forEach((k, v) -> out.put(k, v.getCount()));
    registry.getTimers().forEach((k, v) -> out.put(k + ".count", v.getCount()));
    registry.getGauges().forEach((k, v) -> out.put(k, ((Number) v.getValue()).longValue()));
    return out;
  }

  /**
   * Sets the backend state gauge {@code name} (the backend names it; the JVM knows no backend).
   * A new gauge joins the source, which is registered again so that every sink shows it: Spark's
   * metrics system copies a source's metrics when the source is registered.
   */
  synchronized void backendState(String name, long value) {
    AtomicLong gauge = backendStates.get(name);
    if (gauge == null) {
      gauge = gauge(name, value);
      backendStates.put(name, gauge);
      SparkContext sc = registeredWith;
      if (sc != null) {
        sc.env().metricsSystem().removeSource(this);
        sc.env().metricsSystem().registerSource(this);
      }
    }
    gauge.set(value);
  }

  void time(Timer timer, long nanos) {
    timer.update(Math.max(0, nanos), TimeUnit.NANOSECONDS);
  }
}
