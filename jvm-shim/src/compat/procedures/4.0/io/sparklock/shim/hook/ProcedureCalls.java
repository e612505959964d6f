package io.sparklock.shim.hook;

import io.sparklock.shim.facts.FactsExtractor;
import io.sparklock.shim.guard.AnalysisTimeLocks;
import io.sparklock.shim.util.OneFieldNode;
import io.sparklock.shim.util.ScalaInterop;
import io.sparklock.shim.wire.Facts;
import java.util.List;
import java.util.Objects;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.analysis.InvokeProcedures;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.Call;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import scala.collection.immutable.Seq;

/**
 * {@code CALL} of a catalog's stored procedure (Spark 4.0+). Spark runs a procedure while it
 * analyses the statement (its {@code InvokeProcedures} resolution rule), before there is any
 * physical plan for {@link SparkLockExec} to wrap, and only then knows the result's columns. So
 * the call is locked where it runs, in the analyzer:
 *
 * <ol>
 *   <li>a rule of the hint batch, which runs before resolution, hands the call to
 *       {@link CallUnderLock}: {@code Call(execute = true)} becomes that node around the same call
 *       with {@code execute = false} (what Spark's own EXPLAIN does), which the analyzer resolves
 *       and binds but never invokes;
 *   <li>once the call is bound, a resolution rule takes the call's locks (its facts: the
 *       command {@code Call} and the tables its arguments name), invokes the procedure through
 *       Spark's own {@code InvokeProcedures} and releases them: the node becomes the procedure's
 *       {@code CommandResult}, exactly what Spark would have made of it.
 * </ol>
 *
 * Queries the procedure runs itself on this thread treat the call's locks as their enclosing
 * statement's ({@link AnalysisTimeLocks#run}). What a call locks is Python's command table
 * (row {@code Call}): every existing session-catalog table a constant string argument names,
 * reported as the field {@code args}.
 */
public final class ProcedureCalls {
  private ProcedureCalls() {}

  public static void register(SparkSessionExtensions ext) {
    ext.injectHintResolutionRule(session -> new HoldCalls());
    ext.injectResolutionRule(RunCalls::new);
  }

  /** Hint batch: a call to run is held back (only a statement's root is a call). */
  static final class HoldCalls extends Rule<LogicalPlan> {
    @Override
    public LogicalPlan apply(LogicalPlan plan) {
      if (plan instanceof Call c && c.execute()) {
        return new CallUnderLock(c.copy(c.procedure(), c.args(), false));
      }
      return plan;
    }
  }

  /** Resolution batch: a held call, once bound, runs holding its locks. */
  static final class RunCalls extends Rule<LogicalPlan> {
    private final SparkSession session;

    RunCalls(SparkSession session) {
      this.session = session;
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
      if (!(plan instanceof CallUnderLock held)) {
        return plan;
      }
      Call call = held.call();
      if (!call.resolved() || !call.bound() || !call.checkArgTypes().isSuccess()) {
        return plan; // not yet (or never: the analyzer reports the call's own error)
      }
      Facts facts = FactsExtractor.checkedFacts(session, call, call, null, null,
          FactsExtractor.sqlText(call), List.of());
      return AnalysisTimeLocks.run(session, facts, () -> new InvokeProcedures(session)
          .apply(call.copy(call.procedure(), call.args(), true)));
    }
  }

  /**
   * A {@code CALL} held back from Spark's {@code InvokeProcedures} until sparklock runs it holding
   * its locks ({@link ProcedureCalls}). Its child is the call with {@code execute = false}, which the
   * analyzer resolves and binds; the node itself is never resolved, so it never outlives analysis:
   * it becomes the procedure's result, or the analyzer reports the call's error.
   */
  static final class CallUnderLock extends LogicalPlan implements OneFieldNode {
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
    public Object onlyField() {
      return call;
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
}
