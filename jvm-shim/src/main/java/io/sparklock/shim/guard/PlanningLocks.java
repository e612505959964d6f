package io.sparklock.shim.guard;

import io.sparklock.shim.facts.SessionConf;
import io.sparklock.shim.guard.HeldExecutions.Held;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.SQLExecution;

/**
 * Locks an execution takes while Spark optimizes its plan, before the scans are built.
 *
 * <p>A connector may fix what a statement reads while Spark optimizes it (Iceberg's scan, and
 * the snapshot its row-level writes validate from): locks granted only when the planned
 * statement runs would let a statement that waited read, and validate against, what was current
 * before it waited. So the optimizer hook asks here first; the acquisition is registered under
 * the execution id like any other, so the execution's lock node finds it ({@link
 * HeldExecutions#claimPlanned}), runs the statement under it and releases it, and the
 * execution-end listener releases it if planning fails after the grant. Outside an execution
 * (a plan optimized by {@code explain()} or before its action) nothing is taken here.
 */
public final class PlanningLocks {
  private PlanningLocks() {}

  /**
   * Takes the locks of the execution running on this thread unless it holds them; true when it
   * holds them now (the caller may re-read what the plan read before the grant), false outside
   * an execution or with locking off.
   */
  public static boolean acquire(SparkSession session) {
    SparkContext sc = session.sparkContext();
    String executionId = sc.getLocalProperty(SQLExecution.EXECUTION_ID_KEY());
    if (executionId == null || !SessionConf.enabled(session)) {
      return false;
    }
    QueryExecution qe;
    try {
      qe = SQLExecution.getQueryExecution(Long.parseLong(executionId));
    } catch (NumberFormatException e) {
      return false;
    }
    if (qe == null) {
      return false;
    }
    Held existing = HeldExecutions.get(executionId);
    if (existing != null) {
      if (existing.refusal != null) {
        // Spark plans again after a failed attempt (the start event's plan, then the action):
        // the refusal stands, the wait is not repeated.
        throw existing.refusal;
      }
      return true;
    }
    Held held = new Held(executionId, sc.getLocalProperty(SQLExecution.EXECUTION_ROOT_ID_KEY()));
    held.whilePlanning = true;
    if (!HeldExecutions.register(held)) {
      return true;
    }
    try {
      LockAcquire.acquire(sc, null, held, LockAcquire.planningFacts(qe, sc, held));
    } catch (RuntimeException e) {
      // Kept registered: the execution's end (its listener) forgets it.
      held.refusal = e;
      throw e;
    } catch (Error e) {
      HeldExecutions.unregister(held); // nothing was granted; the lock node acquires again
      throw e;
    }
    return true;
  }
}
