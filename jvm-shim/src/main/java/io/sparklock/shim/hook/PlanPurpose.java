package io.sparklock.shim.hook;

import java.util.Set;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.SQLExecution;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.command.ExplainCommand;

/**
 * Top-level physical plans that never run as a statement, so they get no {@link SparkLockExec}:
 *
 * <ul>
 *   <li>the plan an EXPLAIN statement prints: Spark plans the explained query only to print it,
 *       and EXPLAIN must print what Spark alone prints (a lock node on top would also shift the
 *       operator ids and the subquery sections of EXPLAIN FORMATTED). A statement that the
 *       explained one runs during its analysis (Spark's own {@code EXPLAIN EXECUTE IMMEDIATE})
 *       runs under an execution of its own and is locked as usual;
 *   <li>a cached table's plan ({@code CACHE TABLE}, {@code Dataset.cache}): it runs only inside
 *       the queries that read the cache, each locked at its own root, and Spark decides from the
 *       cached plan's shape how the reading query is planned (a wrapper there cost the reader
 *       its adaptive execution).
 * </ul>
 */
final class PlanPurpose {
  private static final Set<String> CACHE_PLANNING =
      Set.of(
          "org.apache.spark.sql.execution.CacheManager",
          "org.apache.spark.sql.execution.columnar.InMemoryRelation",
          "org.apache.spark.sql.execution.columnar.InMemoryRelation$");
  private static final StackWalker WALKER = StackWalker.getInstance();

  private PlanPurpose() {}

  /** True when {@code plan} is planned for printing or caching, never to run as a statement. */
  static boolean neverRunsAsStatement(SparkPlan plan) {
    return printedByExplain(plan) || plannedForCache();
  }

  /**
   * The running execution on this thread is an EXPLAIN statement: the plan being made is the one
   * it prints (a statement it runs meanwhile has an execution id of its own).
   */
  static boolean printedByExplain(SparkPlan plan) {
    QueryExecution running = running(plan.sparkContext());
    return running != null && running.logical() instanceof ExplainCommand;
  }

  /**
   * A plan is being optimized inside an execution that runs it as a statement: an execution id
   * is set on the thread, and the execution is neither an EXPLAIN (it prints the plan) nor one
   * of sparklock's own statements (EXPLAIN LOCKS analyses what it explains, and runs nothing).
   */
  static boolean optimizedToRun(SparkContext sc) {
    QueryExecution running = running(sc);
    return running != null
        && !(running.logical() instanceof ExplainCommand)
        && !SparkLockColumnarRule.InsertLockRoot.isOwnStatement(running.logical());
  }

  private static QueryExecution running(SparkContext sc) {
    String id = sc.getLocalProperty(SQLExecution.EXECUTION_ID_KEY());
    if (id == null) {
      return null;
    }
    try {
      return SQLExecution.getQueryExecution(Long.parseLong(id));
    } catch (NumberFormatException e) {
      return null;
    }
  }

  /** Planned by the cache manager (caching or re-caching a plan's data). */
  static boolean plannedForCache() {
    return WALKER.walk(frames -> frames.anyMatch(f -> CACHE_PLANNING.contains(f.getClassName())));
  }
}
