package io.sparklock.shim;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.ColumnarRule;
import org.apache.spark.sql.internal.SQLConf;
import scala.collection.Iterator;

/**
 * The JVM end of the bridge (jvm-shim/BRIDGE.md): the one Python callback of this JVM and the
 * helpers every hook and statement uses to call it.
 *
 * <p>Every call to Python goes through {@link #call}: a missing callback while locking is enabled
 * fails closed with {@code SPARKLOCK_NOT_ATTACHED}, an answer with {@code "ok": false} becomes a
 * {@link SparkLockException} whose message is the Python error text verbatim and whose condition
 * and parameters are the answer's {@link Messages.Failure}.
 */
public final class SparkLockBridge {
  public static final String CONF_PREFIX = "spark.sparklock.";
  public static final String ENABLED_KEY = "spark.sparklock.enabled";
  /** Where the session's Hive catalog is: the metastore manager's default URIs. */
  public static final String METASTORE_URIS_KEY = "hive.metastore.uris";

  /** Why a statement fails when locking is on and no Python lock service is attached. */
  public static final String NOT_ATTACHED =
      "the sparklock Spark extension is active "
          + "(spark.sql.extensions=io.sparklock.shim.SparkLockExtensions) but no Python lock "
          + "service is attached to this JVM, so the statement was not run; create the session "
          + "with sparklock.configure(SparkSession.builder...).getOrCreate() (or call "
          + "sparklock.spark.attach(spark)), or set spark.sparklock.enabled=false to run "
          + "without locks";

  private static final AtomicReference<LockCallback> CALLBACK = new AtomicReference<>();

  /** The failure of a statement run with locking on and no Python lock service attached. */
  static SparkLockException notAttached() {
    return new SparkLockException(ErrorCondition.SPARKLOCK_NOT_ATTACHED, NOT_ATTACHED);
  }

  private SparkLockBridge() {}

  /** Attach the Python callback (BRIDGE.md: once per JVM; a later call replaces it). */
  public static void setCallback(LockCallback cb) {
    CALLBACK.set(cb);
  }

  /** The attached callback, or null. */
  public static LockCallback callback() {
    return CALLBACK.get();
  }

  /** Whether {@code spark.sparklock.enabled} (session conf, default true) is on. */
  public static boolean enabled(SparkSession session) {
    if (session == null) {
      return true;
    }
    String v = session.sessionState().conf().getConfString(ENABLED_KEY, "true");
    // Fail safe: anything but an explicit "false" keeps locking on (Python validates the value).
    return !"false".equalsIgnoreCase(v.trim());
  }

  /**
   * Every {@code spark.sparklock.*} entry of the session conf, sorted, and the session's {@code
   * hive.metastore.uris} (from {@code spark.hadoop.*} or a {@code hive-site.xml}) if it has one:
   * the metastore manager's default, which no {@code spark.sparklock.*} key carries.
   */
  public static Map<String, String> sessionConf(SparkSession session) {
    Map<String, String> out = new TreeMap<>();
    if (session == null) {
      return out;
    }
    SQLConf conf = session.sessionState().conf();
    Iterator<scala.Tuple2<String, String>> it = conf.getAllConfs().iterator();
    while (it.hasNext()) {
      scala.Tuple2<String, String> kv = it.next();
      if (kv._1().startsWith(CONF_PREFIX)) {
        out.put(kv._1(), kv._2());
      }
    }
    String uris = conf.getConfString("spark.hadoop." + METASTORE_URIS_KEY, "");
    if (uris.trim().isEmpty()) {
      String shared = session.sparkContext().hadoopConfiguration().get(METASTORE_URIS_KEY);
      uris = shared == null ? "" : shared;
    }
    if (!uris.trim().isEmpty()) {
      out.put(METASTORE_URIS_KEY, uris.trim());
    }
    return out;
  }

  /** {@link #sessionConf} as a JSON object (tests, debugging). */
  public static String sessionConfJson(SparkSession session) {
    return Messages.write(sessionConf(session));
  }

  /** Whether the sparklock extension is installed in this session (its columnar rule is). */
  public static boolean installed(SparkSession session) {
    Iterator<ColumnarRule> it = session.sessionState().columnarRules().iterator();
    while (it.hasNext()) {
      if (it.next() instanceof SparkLockColumnarRule) {
        return true;
      }
    }
    return false;
  }

  // ------------------------------------------------------------------ calls into Python

  /** acquire(facts) → the grant (handle "" = nothing locked); throws on ok=false. */
  static Messages.Acquired acquire(String factsJson) {
    long sent = StatementHooks.now();
    try {
      return call("acquire", cb -> InterruptibleCall.run(() -> cb.acquire(factsJson)),
          Messages.Acquired.class);
    } finally {
      StatementHooks.acquireCalled(factsJson, sent);
    }
  }

  /** release(handle); throws on ok=false. */
  static void release(String handle) {
    long sent = StatementHooks.now();
    try {
      call("release", cb -> cb.release(handle), Messages.Done.class);
    } finally {
      StatementHooks.releaseCalled(sent);
    }
  }

  /** EXPLAIN LOCKS: the locks the facts would take; throws on ok=false or no callback. */
  static Messages.Explained explain(String factsJson) {
    return call("explain", cb -> cb.explain(factsJson), Messages.Explained.class);
  }

  /** SHOW LOCKS: Python's locks; throws on ok=false or no callback. */
  static Messages.Locks showLocks(Messages.ShowLocksRequest request) {
    String json = Messages.write(request);
    return call("showLocks", cb -> InterruptibleCall.run(() -> cb.showLocks(json)),
        Messages.Locks.class);
  }

  /** LOCK TABLE / DATABASE (waits like a statement: interruptible); throws on ok=false. */
  static Messages.Done lock(Messages.ExplicitLockRequest request) {
    String json = Messages.write(request);
    return call("lock", cb -> InterruptibleCall.run(() -> cb.lock(json)), Messages.Done.class);
  }

  /** UNLOCK TABLE / DATABASE; throws on ok=false or no callback. */
  static Messages.Done unlock(Messages.UnlockRequest request) {
    String json = Messages.write(request);
    return call("unlock", cb -> InterruptibleCall.run(() -> cb.unlock(json)),
        Messages.Done.class);
  }

  /** The Locks tab's snapshot (raw JSON: the page reads it as a tree); throws when detached. */
  public static String locksSnapshot(String requestJson) {
    LockCallback cb = CALLBACK.get();
    if (cb == null) {
      throw notAttached();
    }
    CallbackSockets.noDelay(cb);
    return cb.locksSnapshot(requestJson);
  }

  /**
   * Calls the callback once ({@code invoke}: one of its methods, {@code method} its name for the
   * errors) and reads its answer once, as {@code type}; throws on ok=false.
   */
  static <T extends Messages.Answer> T call(
      String method, Function<LockCallback, String> invoke, Class<T> type) {
    LockCallback cb = CALLBACK.get();
    if (cb == null) {
      throw notAttached();
    }
    String answer;
    CallbackSockets.noDelay(cb);
    try {
      answer = invoke.apply(cb);
    } catch (SparkLockException e) {
      throw e;
    } catch (RuntimeException e) {
      // py4j failures (the Python process or its callback server is gone).
      throw new SparkLockException(ErrorCondition.LOCK_SERVICE_UNREACHABLE,
          "calling the Python lock service (" + method + ") failed: " + e, e);
    }
    T parsed;
    try {
      parsed = answer == null ? null : Messages.JSON.readValue(answer, type);
    } catch (java.io.IOException e) {
      parsed = null;
    }
    if (parsed == null) {
      throw new SparkLockException(ErrorCondition.LOCK_SERVICE_PROTOCOL,
          "the Python lock service answered " + method
              + " with something that is not a JSON object: " + Messages.abbreviate(answer));
    }
    if (!parsed.ok()) {
      if (parsed.error() == null) {
        throw new SparkLockException(ErrorCondition.LOCK_SERVICE_PROTOCOL,
            method + " failed without an error text: " + Messages.abbreviate(answer));
      }
      throw new SparkLockException(parsed.error(), parsed.failure());
    }
    return parsed;
  }

  /**
   * Fencing (BRIDGE.md): cancels the jobs run while {@code handle} held its locks (they carry
   * {@link FenceTags#of}); Python calls it when the handle's locks are lost.
   */
  public static void cancelFencedJobs(SparkContext sc, String handle, String reason) {
    JobCancellation.cancelJobsWithTag(sc, FenceTags.of(handle), reason);
  }
}
