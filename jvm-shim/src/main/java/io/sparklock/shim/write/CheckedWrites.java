package io.sparklock.shim.write;

import java.lang.reflect.Proxy;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.v2.V2TableWriteExec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Non-file v2 writes (Iceberg's snapshot commit, any catalog's v2 table) checked against the
 * lease at their commit (docs/fencing.md).
 *
 * <p>Spark's v2 write nodes ({@code AppendDataExec}, {@code OverwriteByExpressionExec},
 * {@code OverwritePartitionsDynamicExec}, {@code ReplaceDataExec}, {@code WriteDeltaExec},
 * {@code WriteToDataSourceV2Exec}) run their job and then call {@code BatchWrite.commit} on
 * the statement's thread: that call is what makes the rows visible. {@link #wrap} gives such a
 * node a {@code Write} (or {@code BatchWrite}) whose batch checks the lease first
 * ({@link LeaseCheckedWrite}); a refused commit throws {@code LOCKS_LOST} out of {@code commit},
 * and Spark then aborts the batch itself. The node is copied field by field
 * ({@code makeCopy}), so every Spark line's constructor (3.5 has three fields, 4.3 five) is
 * served without naming one.
 */
public final class CheckedWrites {
  private static final Logger LOG = LoggerFactory.getLogger("io.sparklock.shim.CheckedWrites");

  private CheckedWrites() {}

  /**
   * {@code plan} with its write checked, when its root is a v2 write node; itself otherwise
   * (a statement's root is its command: nothing deeper needs a look).
   */
  public static SparkPlan wrap(SparkPlan plan) {
    if (!(plan instanceof V2TableWriteExec)) {
      return plan;
    }
    int n = plan.productArity();
    Object[] args = new Object[n];
    boolean changed = false;
    for (int i = 0; i < n; i++) {
      Object field = plan.productElement(i);
      Object checked = checked(field);
      changed |= checked != field;
      args[i] = checked;
    }
    if (!changed) {
      return plan;
    }
    try {
      return (SparkPlan) plan.makeCopy(args);
    } catch (RuntimeException e) {
      // A node Spark's copy cannot rebuild (a library's own write node): it runs as planned,
      // its commit covered by the start check and the job cancellation only.
      LOG.warn("sparklock: the commit of {} is not checked against the lease: {}",
          plan.nodeName(), e.toString());
      return plan;
    }
  }

  /** A {@code Write} or {@code BatchWrite} with its commit checked; anything else as it is. */
  static Object checked(Object field) {
    if (field == null || LeaseCheckedWrite.isChecked(field)) {
      return field;
    }
    if (field instanceof Write || field instanceof BatchWrite) {
      return proxy(field);
    }
    return field;
  }

  /**
   * A proxy with every public interface {@code target} implements (a {@code DeltaWrite}, a
   * {@code RequiresDistributionAndOrdering}, a {@code DeltaBatchWrite} stay what they are).
   */
  static Object proxy(Object target) {
    ClassLoader loader = target.getClass().getClassLoader();
    Set<Class<?>> interfaces = new LinkedHashSet<>();
    for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
      collect(c, loader, interfaces);
    }
    return Proxy.newProxyInstance(loader, interfaces.toArray(new Class<?>[0]),
        new LeaseCheckedWrite(target));
  }

  private static void collect(Class<?> c, ClassLoader loader, Set<Class<?>> out) {
    for (Class<?> i : c.getInterfaces()) {
      if (java.lang.reflect.Modifier.isPublic(i.getModifiers()) && visible(i, loader)) {
        out.add(i);
      }
      collect(i, loader, out);
    }
  }

  private static boolean visible(Class<?> c, ClassLoader loader) {
    try {
      return Class.forName(c.getName(), false, loader) == c;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  // ------------------------------------------------------------------ tests

  private static volatile CountDownLatch held;
  private static final AtomicInteger WAITING = new AtomicInteger();

  /**
   * Tests: v2 commits wait before their lease check until {@link #releaseCommits} (so a test
   * can let the lease lapse between a write's job and its commit, with no job to cancel).
   */
  public static void holdCommits() {
    held = new CountDownLatch(1);
  }

  /** Tests: the held commits go on (to their lease check). */
  public static void releaseCommits() {
    CountDownLatch latch = held;
    held = null;
    if (latch != null) {
      latch.countDown();
    }
  }

  /** Tests: how many commits wait in {@link #holdCommits}. */
  public static int heldCommits() {
    return WAITING.get();
  }

  static void awaitRelease() {
    CountDownLatch latch = held;
    if (latch == null) {
      return;
    }
    WAITING.incrementAndGet();
    try {
      latch.await(120, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      WAITING.decrementAndGet();
    }
  }
}
