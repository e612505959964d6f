package io.sparklock.shim.util;

import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.trees.LeafLike;
import org.apache.spark.sql.execution.command.LeafRunnableCommand;
import org.apache.spark.sql.execution.command.RunnableCommand;
import scala.Enumeration;

/**
 * The Scala-trait plumbing of a leaf runnable command written in Java, whose method
 * <i>parameter</i> types name Scala collections and so differ per Scala version (Java overrides
 * need exact parameter types). Scala 2.12 (Spark 3.5): Spark's `Seq`/`IndexedSeq` are `scala.collection.Seq`/`scala.collection.IndexedSeq`. Return types stay in the subclass: it declares
 * {@code scala.collection.immutable.Seq}, a valid (covariant) override on both versions.
 */
public abstract class LeafCommandNode extends LogicalPlan implements LeafRunnableCommand {
  private scala.collection.Seq<Enumeration.Value> nodePatterns;

  protected LeafCommandNode() {
    super();
    Command.$init$(this);
    RunnableCommand.$init$(this);
    LeafLike.$init$(this);
  }

  @Override
  public LogicalPlan withNewChildrenInternal(scala.collection.IndexedSeq<LogicalPlan> newChildren) {
    return this;
  }

  @Override
  public scala.collection.Seq<Enumeration.Value> nodePatterns() {
    return nodePatterns;
  }

  @Override
  public void org$apache$spark$sql$catalyst$plans$logical$Command$_setter_$nodePatterns_$eq(
      scala.collection.Seq<Enumeration.Value> patterns) {
    this.nodePatterns = patterns;
  }
}
