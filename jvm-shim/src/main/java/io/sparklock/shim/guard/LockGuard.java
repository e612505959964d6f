package io.sparklock.shim.guard;

import io.sparklock.shim.facts.SessionConf;
import io.sparklock.shim.guard.HeldExecutions.Held;
import io.sparklock.shim.lease.ExecutionLeases;
import java.util.function.Supplier;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.SQLExecution;

/**
 * Acquire → run → release around one execution, with these rules:
 *
 * <ul>
 *   <li><b>One acquisition per execution id.</b> The first {@link SparkLockExec} entered for an
 *       execution id ({@code spark.sql.execution.id}) acquires; any other wrapper entered while
 *       that execution still holds (a subquery plan wrapped when AQE is off, a cached plan's root
 *       computed inside the action, a re-entry through the same plan) just runs. The facts come
 *       from the execution's own {@code QueryExecution}, so they already cover its subqueries.
 *   <li><b>Nested executions lock their own facts.</b> A command that starts statements of its
 *       own (saveAsTable → CTAS → insert) gives them new execution ids that share
 *       {@code spark.sql.execution.root.id}. They are acquired like any other execution (their
 *       facts say what they really write, e.g. the insert's partitions), with
 *       {@code "enclosingHandles"} naming the handles the enclosing executions of the same root
 *       already hold on this JVM, so the service can treat them as one owner (a statement must
 *       never wait for its own locks). Skipping them instead would leave the write unprotected
 *       when the outer facts are coarser than the inner ones.
 *   <li><b>Release is synchronous</b>: the action's thread waits for it, in {@code finally},
 *       before {@code collect()} / {@code spark.sql()} returns (the call into Python itself is
 *       made from a {@code sparklock-release} thread, see {@link LockRelease#releaseOffThread}) -- whatever the body throws: a failed or
 *       cancelled job surfaces as Scala's {@code SparkException}, a <i>checked</i> exception Java
 *       code does not see declared, so every catch here is {@code Throwable}. The query-end listener only releases
 *       what is still open (RDD paths, failures between acquire and run): idempotent safety net.
 *   <li><b>RDD paths</b> ({@code doExecute}: toLocalIterator, Arrow toPandas, foreach) have no
 *       synchronous end: with an execution id the locks are held until the listener sees the
 *       execution end; without one ({@code df.rdd}) the locks are only checked (acquired and
 *       released at once) because nothing would ever release them.
 *   <li><b>Fencing.</b> While a synchronous action holds its locks, its thread carries the job tag
 *       {@link FenceTags#of} of the handle, so every job it starts does too (RDD paths: the thread
 *       that runs {@code doExecute} and submits their jobs). If the locks are lost
 *       (ZooKeeper session expired) Python cancels the jobs with that tag at once, and the release
 *       answers {@code LOCKS_LOST}: that error, not the job cancellation, is what the action
 *       throws, and an action whose jobs had already finished fails with it as well.
 *   <li><b>Cancellable waits.</b> The facts carry the thread's job group ({@code jobGroup}) and
 *       job tags ({@code jobTags}) so that a cancellation of them can end a wait in Python (a
 *       waiting statement has no job Spark could cancel).
 * </ul>
 */
public final class LockGuard {
  private LockGuard() {}

  // The jobs are split: LockAcquire (context, facts, the acquire call, once per execution),
  // LockRelease (fenced run, release, the execution-end safety net), AnalysisTimeLocks (CALL),
  // HeldExecutions (what this JVM holds), FenceTags; timers only through StatementHooks.

  /** Runs {@code body} holding the locks of the current execution (synchronous actions). */
  public static <T> T runLocked(GuardedNode node, Supplier<T> body) {
    LockAcquire.Context c = LockAcquire.context(node.plan());
    if (!SessionConf.enabled(c.session)) {
      return body.get();
    }
    Held held = LockAcquire.acquireOnce(c, node);
    if (held == null) {
      return body.get(); // this execution already holds its locks
    }
    try {
      return LockRelease.runThenRelease(
          node.sparkContext(), held, LockAcquire.afterGrant(c, node, held, body));
    } finally {
      HeldExecutions.unregister(held);
    }
  }

  /** RDD paths: acquire now, release when the execution ends (or at once without one). */
  public static void lockUntilExecutionEnd(GuardedNode node) {
    LockAcquire.Context c = LockAcquire.context(node.plan());
    if (!SessionConf.enabled(c.session)) {
      return;
    }
    Held held = LockAcquire.acquireOnce(c, node);
    if (held == null) {
      return;
    }
    if (held.executionId == null) {
      // Nothing would ever release locks held past this call: check them only.
      try {
        LockAcquire.afterGrant(c, node, held, () -> null).get();
      } finally {
        LockRelease.release(held);
      }
      return;
    }
    if (insideMicroBatch(held)) {
      held.untilRootEnds = true;
      ExecutionLeases.bind(held.rootExecutionId, held.handle);
    }
    // A failure here leaves the release to the query-end listener (the execution is registered).
    LockAcquire.afterGrant(c, node, held, () -> null).get();
    if (!held.handle.isEmpty()) {
      // Fencing: the jobs of an RDD path are submitted from the thread that runs doExecute (the
      // serving thread of toLocalIterator / Arrow, or the action's own thread for foreach).
      ThreadFences.add(node.sparkContext(), held.handle);
    }
  }

  /**
   * Whether {@code held} is a nested execution of a streaming micro-batch. A v1 sink (Delta's)
   * writes the batch's files in a nested execution, which takes the batch's locks, and commits
   * to its log afterwards from the batch's own execution, which runs no plan of its own: the
   * locks must last, and the commit be checked against their lease, until that execution ends.
   */
  private static boolean insideMicroBatch(Held held) {
    String root = held.rootExecutionId;
    if (root == null || root.equals(held.executionId) || held.handle.isEmpty()) {
      return false;
    }
    QueryExecution qe;
    try {
      qe = SQLExecution.getQueryExecution(Long.parseLong(root));
    } catch (NumberFormatException e) {
      return false;
    }
    return qe != null && qe.getClass().getSimpleName().equals("IncrementalExecution");
  }
}
