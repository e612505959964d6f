package io.sparklock.shim.wire;

/**
 * What the JVM calls in Python (implemented by {@code sparklock.spark.callback.PyLockCallback}).
 * Exactly the interface of jvm-shim/BRIDGE.md: one method per kind of call, each argument and
 * result a JSON string typed in {@link Messages} (the facts in {@link Facts}). Every answer has
 * {@code ok}, and the error text when not ({"ok":false,"error":"LOCK_CONFLICT: ..."}).
 */
public interface LockCallback {
  /**
   * Take the implicit locks of one execution. Returns {@link Messages.Acquired}: JSON
   * {"ok":true,"handle":"&lt;id&gt;","refreshListing":true,"readEpochs":{...}} ("handle" is ""
   * when nothing needed locking).
   */
  String acquire(String factsJson);

  /** Release an execution's locks; idempotent (the listener may call it a second time). Done. */
  String release(String handle);

  /** EXPLAIN LOCKS: the facts of the analysed statement → {@link Messages.Explained}. */
  String explain(String factsJson);

  /** SHOW LOCKS: {@link Messages.ShowLocksRequest} → {@link Messages.Locks}. */
  String showLocks(String requestJson);

  /** LOCK TABLE / DATABASE: {@link Messages.ExplicitLockRequest} → Done once granted. */
  String lock(String requestJson);

  /** UNLOCK TABLE / DATABASE: {@link Messages.UnlockRequest} → Done. */
  String unlock(String requestJson);

  /** A server statement interrupted while waiting: {@link Messages.CancelWaitsRequest} → Done. */
  String cancelWaits(String requestJson);

  /** A server session ended: {@link Messages.SessionClosedRequest} → Done. */
  String sessionClosed(String requestJson);

  /**
   * The Spark UI's Locks tab: {"appId":"...","maxRows":500} → the snapshot of this
   * application's locks ({@code sparklock/service/snapshot.py}), {"ok":true,...}.
   */
  String locksSnapshot(String requestJson);
}
