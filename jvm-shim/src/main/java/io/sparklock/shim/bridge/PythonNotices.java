package io.sparklock.shim.bridge;

import io.sparklock.shim.util.ScalaInterop;
import io.sparklock.shim.wire.LockCallback;
import io.sparklock.shim.wire.Messages;
import java.util.function.Function;
import org.apache.spark.SparkContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the JVM tells Python without waiting for an answer: the end of lock waits (a cancelled
 * statement or job group) and of server sessions. No callback means nothing to tell; a failure is
 * only logged. Whether this JVM serves server sessions is kept here, below the server registry,
 * because an interruptible call ({@link InterruptibleCall}) asks it on every wait.
 */
public final class PythonNotices {
  private static final Logger LOG = LoggerFactory.getLogger("io.sparklock.shim.ServerSessions");

  private static volatile boolean serving;
  private static volatile SparkContext context;

  private PythonNotices() {}

  /** This JVM serves server sessions (Thrift or Connect) of {@code sc}: waits are interruptible. */
  public static void serving(SparkContext sc) {
    context = sc;
    serving = true;
  }

  /** Whether statements of this JVM come from server sessions (their waits are interruptible). */
  public static boolean serving() {
    return serving;
  }

  /**
   * The statement thread was interrupted (JDBC cancel, Connect interrupt, its session closed)
   * while it waited for locks: end the waits of its job group / job tags in Python.
   */
  static void cancelWaitsOfThisThread(String reason) {
    SparkContext sc = context;
    if (sc == null) {
      return;
    }
    cancelWaits(new Messages.CancelWaitsRequest(
        sc.getLocalProperty("spark.jobGroup.id"), ScalaInterop.list(sc.getJobTags()), reason));
  }

  /** End the lock waits of a job group in Python ({@link CancelledJobGroups}). */
  static void cancelWaitsOfGroup(String group, String reason) {
    cancelWaits(new Messages.CancelWaitsRequest(group, null, reason));
  }

  /** A server session ended: Python ends its waits and may release its explicit locks. */
  public static void sessionClosed(Messages.SessionClosedRequest request) {
    quietly("sessionClosed", cb -> cb.sessionClosed(Messages.write(request)));
  }

  private static void cancelWaits(Messages.CancelWaitsRequest request) {
    quietly("cancelWaits", cb -> cb.cancelWaits(Messages.write(request)));
  }

  private static void quietly(String method, Function<LockCallback, String> invoke) {
    LockCallback cb = PythonCalls.callback();
    if (cb == null) {
      return;
    }
    try {
      invoke.apply(cb);
    } catch (Exception e) {
      LOG.warn("sparklock: {} failed: {}", method, e.toString());
    }
  }
}
