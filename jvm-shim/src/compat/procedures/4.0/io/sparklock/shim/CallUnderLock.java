package io.sparklock.shim;

import java.util.List;
import java.util.Objects;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.Call;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import scala.collection.immutable.Seq;

/**
 * A {@code CALL} held back from Spark's {@code InvokeProcedures} until sparklock runs it holding
 * its locks ({@link ProcedureCalls}). Its child is the call with {@code execute = false}, which the
 * analyzer resolves and binds; the node itself is never resolved, so it never outlives analysis:
 * it becomes the procedure's result, or the analyzer reports the call's error.
 */
public final class CallUnderLock extends LogicalPlan {
  private final Call call;

  CallUnderLock(Call call) {
    super();
    this.call = call;
  }

  public Call call() {
    return call;
  }

  @Override
  public boolean resolved() {
    return false;
  }

  @Override
  public Seq<Attribute> output() {
    return call.output();
  }

  @Override
  public Seq<LogicalPlan> children() {
    return ScalaInterop.seq(List.<LogicalPlan>of(call));
  }

  @Override
  public LogicalPlan withNewChildrenInternal(
      scala.collection.immutable.IndexedSeq<LogicalPlan> newChildren) {
    return copyWith((Call) newChildren.head());
  }

  @Override
  public LogicalPlan makeCopy(Object[] newArgs) {
    return copyWith((Call) newArgs[0]);
  }

  @Override
  public LogicalPlan clone() {
    return copyWith(call);
  }

  private CallUnderLock copyWith(Call newCall) {
    CallUnderLock c = new CallUnderLock(newCall);
    c.copyTagsFrom(this);
    return c;
  }

  @Override
  public String nodeName() {
    return "CallUnderLock";
  }

  @Override
  public int productArity() {
    return 1;
  }

  @Override
  public Object productElement(int n) {
    if (n == 0) {
      return call;
    }
    throw new IndexOutOfBoundsException(String.valueOf(n));
  }

  @Override
  public boolean canEqual(Object that) {
    return that instanceof CallUnderLock;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof CallUnderLock c && c.call.equals(call);
  }

  @Override
  public int hashCode() {
    return Objects.hash(call) * 31 + 13;
  }
}
