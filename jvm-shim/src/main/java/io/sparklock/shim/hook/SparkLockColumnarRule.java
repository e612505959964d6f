package io.sparklock.shim.hook;

import io.sparklock.shim.write.CheckedWrites;
import io.sparklock.shim.write.CommitProtocols;
import java.util.Iterator;
import java.util.Set;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.ColumnarRule;
import org.apache.spark.sql.execution.CommandResultExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.command.ExecutedCommandExec;
import org.apache.spark.sql.execution.command.ExplainCommand;
import org.apache.spark.sql.execution.command.RunnableCommand;

/**
 * Puts a {@link SparkLockExec} at the root of every top-level physical plan.
 *
 * <p>Spark applies the columnar rules once to the top-level plan of a {@code QueryExecution}
 * (this is where the wrapper goes) and again to plans that are not roots: AQE query stages, the
 * AQE final stage and re-optimised plans, and subquery plans (with and without AQE). Wrapping
 * those would break AQE (a stage must stay an exchange) and lock twice, so the rule looks at the
 * call stack: walking outwards from this rule, a frame of {@code QueryExecution} itself (the lazy
 * {@code executedPlan}) before any AQE or subquery-planning frame means "top-level plan". A nested
 * statement started from inside a running command (saveAsTable → CTAS → insert) plans through
 * its own {@code QueryExecution}, so it is wrapped too. Plans that never run as a statement
 * (what EXPLAIN prints, a cached table's plan) stay as Spark made them ({@link PlanPurpose}).
 * A v2 write at the root gets a write whose commit checks the lease ({@link CheckedWrites}).
 */
public class SparkLockColumnarRule extends ColumnarRule {
  private final Rule<SparkPlan> insert = new InsertLockRoot();

  @Override
  public Rule<SparkPlan> postColumnarTransitions() {
    return insert;
  }

  /** The rule proper. */
  public static final class InsertLockRoot extends Rule<SparkPlan> {
    private static final String QUERY_EXECUTION = "org.apache.spark.sql.execution.QueryExecution";
    private static final String AQE_PACKAGE = "org.apache.spark.sql.execution.adaptive.";
    private static final Set<String> NOT_TOP_LEVEL =
        Set.of(
            "org.apache.spark.sql.execution.PlanSubqueries",
            "org.apache.spark.sql.execution.dynamicpruning.PlanDynamicPruningFilters",
            "org.apache.spark.sql.execution.ReuseSubquery",
            "org.apache.spark.sql.execution.reuse.ReuseExchangeAndSubquery");
    private static final StackWalker WALKER = StackWalker.getInstance();

    @Override
    public SparkPlan apply(SparkPlan plan) {
      if (plan instanceof SparkLockExec || plan instanceof CommandResultExec) {
        // Already wrapped, or the cached result of an eager command that already ran (locked).
        return plan;
      }
      if (plan instanceof ExecutedCommandExec) {
        RunnableCommand cmd = ((ExecutedCommandExec) plan).cmd();
        if (cmd instanceof ExplainCommand || isOwnStatement(cmd)) {
          return plan;
        }
      }
      if (!isTopLevelPlanning() || PlanPurpose.neverRunsAsStatement(plan)) {
        return plan;
      }
      CommitProtocols.check(plan); // a file write under a protocol swapped at runtime: refused
      // A v2 write's own commit is checked against the lease too (CheckedWrites).
      return new SparkLockExec(CheckedWrites.wrap(plan));
    }

    /** SHOW LOCKS / LOCK / UNLOCK / EXPLAIN LOCKS call Python themselves. */
    public static boolean isOwnStatement(Object node) {
      return node != null && node.getClass().getName().startsWith("io.sparklock.");
    }

    static boolean isTopLevelPlanning() {
      return WALKER.walk(
          frames -> {
            Iterator<StackWalker.StackFrame> it = frames.iterator();
            while (it.hasNext()) {
              String cls = it.next().getClassName();
              if (cls.equals(QUERY_EXECUTION)) {
                return true;
              }
              if (cls.startsWith(AQE_PACKAGE) || NOT_TOP_LEVEL.contains(cls)) {
                return false;
              }
            }
            // Planned outside any QueryExecution: wrap; the runtime guard (one acquisition per
            // execution id) keeps it harmless if it turns out to run inside another execution.
            return true;
          });
    }
  }
}
