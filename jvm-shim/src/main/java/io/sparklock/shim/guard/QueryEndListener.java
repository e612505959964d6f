package io.sparklock.shim.guard;

import java.util.Collections;
import java.util.Set;
import java.util.WeakHashMap;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd;

/**
 * Safety net: when an SQL execution ends, release any locks it still holds (RDD paths, or an
 * action that died between acquire and its own release). Asynchronous (listener bus), so it is
 * never the primary release; release is idempotent on both sides.
 */
public final class QueryEndListener extends SparkListener {
  private static final Set<SparkContext> REGISTERED =
      Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

  /** Registers one listener per SparkContext. */
  public static void register(SparkContext sc) {
    if (REGISTERED.add(sc)) {
      sc.addSparkListener(new QueryEndListener());
    }
  }

  @Override
  public void onOtherEvent(SparkListenerEvent event) {
    if (event instanceof SparkListenerSQLExecutionEnd) {
      LockRelease.onExecutionEnd(((SparkListenerSQLExecutionEnd) event).executionId());
    }
  }
}
