package io.sparklock.shim.guard;

import org.apache.spark.SparkContext;
import org.apache.spark.sql.execution.SparkPlan;

/**
 * The plan node a statement's locks are taken for, as the guard sees it: the guard runs it and
 * reports the wait back to it (the SQL tab's metric) without knowing the node's class, so the
 * guard sits below the hook that installs the node.
 */
public interface GuardedNode {
  /** The node itself (its session and context). */
  SparkPlan plan();

  /** The plan run under the locks (its logical link is the statement read when no query runs). */
  SparkPlan child();

  SparkContext sparkContext();

  /** The lock wait of the execution this node locked (refused waits too). */
  void recordLockWait(long waitedNs, String executionId);
}
