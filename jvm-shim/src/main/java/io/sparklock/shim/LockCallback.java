package io.sparklock.shim;

/**
 * What the JVM calls in Python (implemented by {@code sparklock.spark.callback.PyLockCallback}).
 * Exactly the interface of jvm-shim/BRIDGE.md; every argument and result is a JSON string, the
 * results and the command request typed in {@link Messages}.
 */
public interface LockCallback {
  /**
   * Take the implicit locks of one execution. Returns {@link Messages.Acquired}: JSON
   * {"ok":true,"handle":"&lt;id&gt;","refreshListing":true,"readEpochs":{...}} ("handle" is ""
   * when nothing needed locking) or {"ok":false,"error":"LOCK_CONFLICT: ..."}.
   */
  String acquire(String factsJson);

  /**
   * Release an execution's locks; idempotent (the listener may call it a second time). Returns
   * JSON {"ok":true} or {"ok":false,"error":"UNLOCK_FAILED: ..."}.
   */
  String release(String handle);

  /** EXPLAIN LOCKS: the facts of the analysed statement → {"ok":true,"rows":[["name","mode"]]}. */
  String explain(String factsJson);

  /** SHOW LOCKS / LOCK / UNLOCK: {"ok":true,"columns":[...],"rows":[[...]]} or {"ok":false}. */
  String command(String requestJson);
}
