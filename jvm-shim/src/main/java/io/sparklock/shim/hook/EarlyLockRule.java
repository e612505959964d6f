package io.sparklock.shim.hook;

import io.sparklock.shim.guard.PlanningLocks;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;

/**
 * Takes an execution's locks while Spark optimizes it, right before its scans are built.
 *
 * <p>Injected as a "pre-CBO" optimizer rule: Spark runs that batch once, immediately before
 * "Early Filter and Projection Push-Down", whose rules (GroupBasedRowLevelOperationScanPlanning,
 * V2ScanRelationPushDown, V2Writes) build a v2 table's scan and write -- where Iceberg fixes the
 * snapshot a statement reads and a DELETE/UPDATE/MERGE validates its commit from. A statement of
 * such a table ({@link SnapshotTables}) that is optimized inside its execution (an action, an
 * eager command: {@code spark.sql.execution.id} is set) takes its locks here, then reads the
 * tables again ({@link SnapshotTables#reload}); the execution's lock node finds the locks held
 * and releases them when the statement ends ({@link PlanningLocks}). A plan optimized outside
 * an execution (explain(), EXPLAIN, a DataFrame planned before its action) is left to that
 * node, as every other statement is.
 */
public final class EarlyLockRule extends Rule<LogicalPlan> {
  private final SparkSession session;

  public EarlyLockRule(SparkSession session) {
    this.session = session;
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (!PlanPurpose.optimizedToRun(session.sparkContext()) || !SnapshotTables.any(plan)) {
      return plan;
    }
    return PlanningLocks.acquire(session) ? SnapshotTables.reload(plan) : plan;
  }
}
