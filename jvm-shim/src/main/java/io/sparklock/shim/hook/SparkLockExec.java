package io.sparklock.shim.hook;

import io.sparklock.shim.guard.GuardedNode;
import io.sparklock.shim.guard.LockGuard;
import io.sparklock.shim.util.OneFieldNode;
import io.sparklock.shim.util.ScalaInterop;
import io.sparklock.shim.util.SingleChildExec;
import io.sparklock.shim.write.CheckedTruncate;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.plans.physical.Partitioning;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.execution.metric.SQLMetrics$;
import scala.Tuple2;
import scala.collection.immutable.Seq;

/**
 * The physical root that takes a statement's locks: {@code executeCollect}/{@code executeTake}/
 * {@code executeTail}/{@code executeCollectIterator} acquire, run the child and release before
 * returning (see {@link LockGuard}); {@code doExecute} (RDD paths: toLocalIterator, Arrow,
 * foreach, df.rdd) acquires and leaves the release to the query-end listener.
 *
 * <p>Its SQL metric {@value #LOCK_WAIT_METRIC} shows in the SQL tab's plan how long the
 * statement waited for its locks (a driver-side metric, posted once the locks are granted).
 */
public class SparkLockExec extends SingleChildExec implements OneFieldNode, GuardedNode {
  private static final long serialVersionUID = 1L;

  static final String LOCK_WAIT_METRIC = "lock wait time";

  private final SparkPlan child;
  /** Created on first use, on the driver (the plan info of the SQL tab asks at execution start). */
  private transient volatile scala.collection.immutable.Map<String, SQLMetric> metrics;

  public SparkLockExec(SparkPlan child) {
    this.child = child;
    if (child.logicalLink().isDefined()) {
      setTagValue(SparkPlan.LOGICAL_PLAN_TAG(), child.logicalLink().get());
    }
  }

  @Override
  public SparkPlan plan() {
    return this;
  }

  @Override
  public SparkPlan child() {
    return child;
  }

  // ------------------------------------------------------------------ execution

  @Override
  public InternalRow[] executeCollect() {
    // A partitioned TRUNCATE runs one partition at a time, the lease checked before each.
    return LockGuard.runLocked(this, () -> CheckedTruncate.executeCollect(child));
  }

  @Override
  public InternalRow[] executeTake(int n) {
    return LockGuard.runLocked(this, () -> child.executeTake(n));
  }

  @Override
  public InternalRow[] executeTail(int n) {
    return LockGuard.runLocked(this, () -> child.executeTail(n));
  }

  @Override
  public Tuple2<Object, scala.collection.Iterator<InternalRow>> executeCollectIterator() {
    // The jobs run inside the child's call (the rows are decoded lazily from collected bytes).
    return LockGuard.runLocked(this, child::executeCollectIterator);
  }

  @Override
  public RDD<InternalRow> doExecute() {
    LockGuard.lockUntilExecutionEnd(this);
    return child.execute();
  }

  @Override
  public <T> org.apache.spark.broadcast.Broadcast<T> doExecuteBroadcast() {
    return child.executeBroadcast();
  }

  // ------------------------------------------------------------------ SQL metric

  @Override
  public scala.collection.immutable.Map<String, SQLMetric> metrics() {
    scala.collection.immutable.Map<String, SQLMetric> m = metrics;
    if (m == null) {
      synchronized (this) {
        m = metrics;
        if (m == null) {
          SQLMetric wait = SQLMetrics$.MODULE$.createNanoTimingMetric(sparkContext(),
              LOCK_WAIT_METRIC, SQLMetrics$.MODULE$.createNanoTimingMetric$default$3());
          m = scala.collection.immutable.Map$.MODULE$.<String, SQLMetric>empty()
              .updated(LOCK_WAIT_METRIC, wait);
          metrics = m;
        }
      }
    }
    return m;
  }

  /** The lock wait of the execution this node locked, for the SQL tab (driver metric update). */
  @Override
  public void recordLockWait(long waitedNs, String executionId) {
    try {
      SQLMetric wait = metrics().apply(LOCK_WAIT_METRIC);
      wait.set(Math.max(0, waitedNs));
      if (executionId != null) {
        SQLMetrics$.MODULE$.postDriverMetricUpdates(sparkContext(), executionId,
            ScalaInterop.seq(java.util.List.of(wait)));
      }
    } catch (RuntimeException e) {
      // A metric must never fail the statement.
      org.slf4j.LoggerFactory.getLogger(SparkLockExec.class)
          .debug("sparklock: recording the lock wait failed: {}", e.toString());
    }
  }

  // ------------------------------------------------------------------ plan node plumbing

  @Override
  public Seq<Attribute> output() {
    return ScalaInterop.immutableSeq(child.output());
  }

  @Override
  public Partitioning outputPartitioning() {
    return child.outputPartitioning();
  }

  @Override
  public Seq<SortOrder> outputOrdering() {
    return ScalaInterop.immutableSeq(child.outputOrdering());
  }

  @Override
  public Seq<SparkPlan> children() {
    return ScalaInterop.seq(java.util.List.of(child));
  }

  @Override
  protected SparkPlan withNewChild(SparkPlan newChild) {
    return new SparkLockExec(newChild);
  }

  @Override
  public String nodeName() {
    return "SparkLock";
  }

  @Override
  public Object onlyField() {
    return child;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof SparkLockExec && ((SparkLockExec) o).child.equals(child);
  }

  @Override
  public int hashCode() {
    return 31 * child.hashCode() + 7;
  }
}
