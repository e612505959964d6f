package io.sparklock.shim.guard;

import io.sparklock.shim.facts.SessionConf;
import io.sparklock.shim.guard.HeldExecutions.Held;
import io.sparklock.shim.wire.Facts;
import java.util.function.Supplier;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;

/**
 * Locks of a statement Spark runs while it analyses it (a {@code CALL}'s procedure, see
 * {@code ProcedureCalls}): there is no execution id and no physical plan, so the locks are held
 * on the analysing thread, and the executions the body starts there (a procedure's own queries)
 * treat them as their enclosing statement's.
 */
public final class AnalysisTimeLocks {
  private AnalysisTimeLocks() {}

  /** The statement run during analysis that holds its locks on this thread, if any. */
  private static final ThreadLocal<Held> DURING_ANALYSIS = new ThreadLocal<>();

  /** What this thread's CALL holds (null outside one). */
  static Held current() {
    return DURING_ANALYSIS.get();
  }

  /** Runs {@code body} holding the locks of {@code facts}, released when it returns or throws. */
  public static <T> T run(SparkSession session, Facts facts, Supplier<T> body) {
    if (!SessionConf.enabled(session)) {
      return body.get();
    }
    SparkContext sc = session.sparkContext();
    Held held = new Held(null, null);
    LockAcquire.acquire(sc, null, held, LockAcquire.withCaller(facts, session, sc));
    Held outer = DURING_ANALYSIS.get();
    DURING_ANALYSIS.set(held);
    try {
      return LockRelease.runThenRelease(sc, held, body);
    } finally {
      DURING_ANALYSIS.set(outer);
    }
  }
}
