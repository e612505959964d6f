package io.sparklock.shim.facts;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sparklock.shim.util.ClassicSession;
import io.sparklock.shim.util.ScalaInterop;
import io.sparklock.shim.wire.ErrorCondition;
import io.sparklock.shim.wire.Facts.FieldRef;
import io.sparklock.shim.wire.Facts.ObjectRef;
import io.sparklock.shim.wire.Facts.WriteRef;
import io.sparklock.shim.wire.Facts;
import io.sparklock.shim.wire.SparkLockException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.QueryPlan;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.CommandResult;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

/**
 * The facts of one statement ({@link Facts}, BRIDGE.md "Facts"): what it reads (after
 * partition pruning, {@link ReadFacts}), what it writes ({@link WriteFacts}), and the table-valued
 * fields of its root command ({@link CommandFields}); paths resolve to their owning tables
 * ({@link PathOwners}). This class assembles them and writes them as JSON.
 *
 * <p>Facts only, no policy: which lock mode goes on which object is Python's decision.
 */
public final class FactsExtractor {
  public static final String SESSION_CATALOG = "spark_catalog";

  private static final ObjectMapper JSON = new ObjectMapper();

  private FactsExtractor() {}

  /** The facts JSON (BRIDGE.md) of a statement; EXPLAIN LOCKS passes null execution ids. */
  public static String factsJson(
      SparkSession session,
      LogicalPlan analyzed,
      LogicalPlan optimized,
      String executionId,
      String rootExecutionId,
      String sqlText) {
    return toJson(checkedFacts(session, analyzed, optimized, executionId, rootExecutionId, sqlText,
        Collections.emptyList()));
  }

  /** The facts as JSON text. */
  public static String toJson(Facts facts) {
    try {
      return JSON.writeValueAsString(facts);
    } catch (JsonProcessingException e) {
      throw new SparkLockException(ErrorCondition.LOCK_FACTS_FAILED,
          "cannot write the facts as JSON: " + e, e);
    }
  }

  /** {@link #facts}, failing closed with LOCK_FACTS_FAILED when the plan cannot be read. */
  public static Facts checkedFacts(
      SparkSession session,
      LogicalPlan analyzed,
      LogicalPlan optimized,
      String executionId,
      String rootExecutionId,
      String sqlText,
      List<String> enclosingHandles) {
    try {
      return facts(session, analyzed, optimized, executionId, rootExecutionId, sqlText,
          enclosingHandles);
    } catch (SparkLockException e) {
      throw e;
    } catch (RuntimeException e) {
      // Fail closed: a statement whose objects are unknown must not run unlocked.
      throw new SparkLockException(ErrorCondition.LOCK_FACTS_FAILED,
          "sparklock could not work out which tables the statement uses ("
              + (analyzed == null ? "no plan" : analyzed.nodeName()) + "): " + e,
          e);
    }
  }

  /** The facts of a statement (no caller yet: see {@link Facts#withCaller}). */
  public static Facts facts(
      SparkSession session,
      LogicalPlan analyzed,
      LogicalPlan optimized,
      String executionId,
      String rootExecutionId,
      String sqlText,
      List<String> enclosingHandles) {
    Refs refs = new Refs(session);
    List<ObjectRef> reads = List.of();
    List<WriteRef> writes = List.of();
    List<FieldRef> fields = List.of();
    if (analyzed != null) {
      reads = new ReadFacts(refs).collect(analyzed, optimized != null ? optimized : analyzed);
      WriteFacts writeFacts = new WriteFacts(refs);
      writes = writeFacts.collect(analyzed);
      // The root command's own fields, for the command table. A write command reported in
      // "writes" (insert into a table or path) is fully described there: its fields would
      // only repeat the target, coarser (the table instead of the partition).
      if (isCommandRoot(analyzed) && writeFacts.writeOf(analyzed) == null) {
        fields = new CommandFields(refs).collect(analyzed);
      }
    }
    return new Facts(
        sessionId(session),
        executionId,
        rootExecutionId,
        sqlText,
        SessionConf.sessionConf(session),
        refs.currentDatabase(),
        analyzed == null ? null : simpleName(analyzed),
        analyzed == null ? null : CallFacts.commandClass(analyzed),
        reads,
        writes,
        fields,
        enclosingHandles == null ? List.of() : enclosingHandles,
        null,
        List.of(),
        null,
        null,
        null);
  }

  /**
   * A root whose fields the command table reads: a {@code Command}, a {@code CALL}, or a
   * streaming query's write node ({@code WriteTo*} of a streaming package, the root of each
   * micro-batch's plan).
   */
  static boolean isCommandRoot(LogicalPlan plan) {
    if (plan instanceof Command || CallFacts.isCall(plan)) {
      return true;
    }
    String name = plan.getClass().getName();
    int dot = name.lastIndexOf('.');
    return name.substring(0, Math.max(dot, 0)).contains(".streaming")
        && name.substring(dot + 1).startsWith("WriteTo");
  }

  /** {@code SparkSession.sessionUUID} (classic sessions), or null. */
  public static String sessionId(SparkSession session) {
    if (session == null) {
      return null;
    }
    String uuid = ClassicSession.sessionUUID(session);
    return uuid != null ? uuid : "session-" + System.identityHashCode(session);
  }

  /** The SQL text the plan was parsed from (Spark 4 origin), or null. */
  public static String sqlText(LogicalPlan plan) {
    if (plan == null) {
      return null;
    }
    try {
      return ScalaInterop.orNull(plan.origin().sqlText());
    } catch (RuntimeException e) {
      return null;
    }
  }

  static String simpleName(Object o) {
    String n = o.getClass().getSimpleName();
    if (n.isEmpty()) {
      n = o.getClass().getName();
      n = n.substring(n.lastIndexOf('.') + 1);
    }
    return n.endsWith("$") ? n.substring(0, n.length() - 1) : n;
  }

  /** Every plan node once: children, inner children (command queries) and subqueries. */
  public static void walkPlan(LogicalPlan root, Consumer<LogicalPlan> visit) {
    Set<Object> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    List<LogicalPlan> stack = new ArrayList<>();
    stack.add(root);
    while (!stack.isEmpty()) {
      LogicalPlan p = stack.remove(stack.size() - 1);
      if (p == null || !seen.add(p)) {
        continue;
      }
      visit.accept(p);
      if (p instanceof CommandResult) {
        continue; // an eager command's cached rows: the command already ran (and locked)
      }
      stack.addAll(ScalaInterop.list(p.children()));
      for (QueryPlan<?> q : ScalaInterop.list(p.innerChildren())) {
        if (q instanceof LogicalPlan lp) {
          stack.add(lp);
        }
      }
      stack.addAll(ScalaInterop.list(p.subqueries()));
      if (p instanceof Command) {
        // a command's plan-valued fields that are neither children nor inner children
        // (SaveAsV1TableCommand.query, Delta's MERGE source/target): read too
        for (Object o : ScalaInterop.list(p.productIterator())) {
          if (ScalaInterop.unwrapOption(o) instanceof LogicalPlan lp) {
            stack.add(lp);
          }
        }
      }
    }
  }
}
