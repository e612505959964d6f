package io.sparklock.shim.lease;

import io.sparklock.shim.lease.Lease.Bound;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.execution.SQLExecution;

/**
 * Statements whose commit is made by code that runs their execution, not inside a body the
 * shim wraps: a streaming micro-batch into Delta locks in the nested execution Delta starts to
 * write its files, and commits to the log afterwards from the batch's own execution (on the
 * stream's thread). Such a statement is bound to its root execution id as well; a commit check
 * on a thread whose (root) execution holds statements checks their leases too.
 */
public final class ExecutionLeases {
  private ExecutionLeases() {}

  /** Root execution id → the handles bound to it. */
  private static final Map<String, Set<String>> BY_ROOT = new ConcurrentHashMap<>();

  /** {@code handle}'s commits may be made on any thread running {@code rootExecutionId}. */
  public static void bind(String rootExecutionId, String handle) {
    if (rootExecutionId != null && handle != null && !handle.isEmpty()) {
      BY_ROOT.computeIfAbsent(rootExecutionId, k -> ConcurrentHashMap.newKeySet()).add(handle);
    }
  }

  static void unbind(String handle) {
    BY_ROOT.values().removeIf(handles -> handles.remove(handle) && handles.isEmpty());
  }

  /**
   * What a commit on this thread makes visible: the statements whose bodies run on it
   * ({@code running}) and those bound to its root execution.
   */
  static Collection<Bound> underCurrentThread(Collection<Bound> running, Map<String, Bound> bound) {
    if (BY_ROOT.isEmpty() || bound.isEmpty()) {
      return running;
    }
    SparkContext sc = bound.values().iterator().next().sc;
    String root = sc.getLocalProperty(SQLExecution.EXECUTION_ROOT_ID_KEY());
    if (root == null) {
      root = sc.getLocalProperty(SQLExecution.EXECUTION_ID_KEY());
    }
    Set<String> handles = root == null ? null : BY_ROOT.get(root);
    if (handles == null) {
      return running;
    }
    List<Bound> out = new ArrayList<>(running);
    for (String handle : handles) {
      Bound b = bound.get(handle);
      if (b != null && !out.contains(b)) {
        out.add(b);
      }
    }
    return out;
  }
}
