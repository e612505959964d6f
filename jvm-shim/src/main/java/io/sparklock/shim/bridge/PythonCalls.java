package io.sparklock.shim.bridge;

import io.sparklock.shim.telemetry.StatementHooks;
import io.sparklock.shim.wire.ErrorCondition;
import io.sparklock.shim.wire.LockCallback;
import io.sparklock.shim.wire.Messages;
import io.sparklock.shim.wire.SparkLockException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

/**
 * The JVM's calls into Python (jvm-shim/BRIDGE.md): the one callback of this JVM and the helpers
 * every hook and statement uses to call it.
 *
 * <p>Every call to Python goes through {@link #call}: a missing callback while locking is enabled
 * fails closed with {@code SPARKLOCK_NOT_ATTACHED}, an answer with {@code "ok": false} becomes a
 * {@link SparkLockException} whose message is the Python error text verbatim and whose condition
 * and parameters are the answer's {@link Messages.Failure}.
 */
public final class PythonCalls {
  /** Why a statement fails when locking is on and no Python lock service is attached. */
  public static final String NOT_ATTACHED =
      "the sparklock Spark extension is active "
          + "(spark.sql.extensions=io.sparklock.shim.SparkLockExtensions) but no Python lock "
          + "service is attached to this JVM, so the statement was not run; create the session "
          + "with sparklock.configure(SparkSession.builder...).getOrCreate() (or call "
          + "sparklock.spark.attach(spark)), or set spark.sparklock.enabled=false to run "
          + "without locks";

  private static final AtomicReference<LockCallback> CALLBACK = new AtomicReference<>();

  private PythonCalls() {}

  /** The failure of a statement run with locking on and no Python lock service attached. */
  public static SparkLockException notAttached() {
    return new SparkLockException(ErrorCondition.SPARKLOCK_NOT_ATTACHED, NOT_ATTACHED);
  }

  /** Attach the Python callback (BRIDGE.md: once per JVM; a later call replaces it). */
  public static void setCallback(LockCallback cb) {
    CALLBACK.set(cb);
  }

  /** The attached callback, or null. */
  public static LockCallback callback() {
    return CALLBACK.get();
  }

  // ------------------------------------------------------------------ calls into Python

  /** acquire(facts) → the grant (handle "" = nothing locked); throws on ok=false. */
  public static Messages.Acquired acquire(String factsJson) {
    long sent = StatementHooks.now();
    try {
      return call("acquire", cb -> InterruptibleCall.run(() -> cb.acquire(factsJson)),
          Messages.Acquired.class);
    } finally {
      StatementHooks.acquireCalled(factsJson, sent);
    }
  }

  /** release(handle); throws on ok=false. */
  public static void release(String handle) {
    long sent = StatementHooks.now();
    try {
      call("release", cb -> cb.release(handle), Messages.Done.class);
    } finally {
      StatementHooks.releaseCalled(sent);
    }
  }

  /** EXPLAIN LOCKS: the locks the facts would take; throws on ok=false or no callback. */
  public static Messages.Explained explain(String factsJson) {
    return call("explain", cb -> cb.explain(factsJson), Messages.Explained.class);
  }

  /** SHOW LOCKS: Python's locks; throws on ok=false or no callback. */
  public static Messages.Locks showLocks(Messages.ShowLocksRequest request) {
    String json = Messages.write(request);
    return call("showLocks", cb -> InterruptibleCall.run(() -> cb.showLocks(json)),
        Messages.Locks.class);
  }

  /** LOCK TABLE / DATABASE (waits like a statement: interruptible); throws on ok=false. */
  public static Messages.Done lock(Messages.ExplicitLockRequest request) {
    String json = Messages.write(request);
    return call("lock", cb -> InterruptibleCall.run(() -> cb.lock(json)), Messages.Done.class);
  }

  /** UNLOCK TABLE / DATABASE; throws on ok=false or no callback. */
  public static Messages.Done unlock(Messages.UnlockRequest request) {
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
  public static <T extends Messages.Answer> T call(
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
}
