package io.sparklock.shim.util;

import org.apache.spark.sql.execution.SparkPlan;

/**
 * A physical node with one child written in Java: {@code withNewChildrenInternal} takes Spark's
 * `IndexedSeq`, whose type differs per Scala version. Scala 2.12 (Spark 3.5): Spark's `Seq`/`IndexedSeq` are `scala.collection.Seq`/`scala.collection.IndexedSeq`.
 */
public abstract class SingleChildExec extends SparkPlan {
  private static final long serialVersionUID = 1L;

  /** A copy of this node over {@code newChild}. */
  protected abstract SparkPlan withNewChild(SparkPlan newChild);

  @Override
  public SparkPlan withNewChildrenInternal(scala.collection.IndexedSeq<SparkPlan> newChildren) {
    return withNewChild(newChildren.apply(0));
  }
}
