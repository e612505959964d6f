package io.sparklock.shim.bridge;

import io.sparklock.shim.util.AwaitCall;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Supplier;

/**
 * A call into Python that a thread interrupt can cancel (server sessions only).
 *
 * <p>A Thrift statement's cancel (JDBC {@code Statement.cancel()}, beeline Ctrl-C, its session
 * closing or its client disconnecting) and a Connect interrupt interrupt the statement's JVM
 * thread. A thread blocked inside a py4j call does not notice, so in a server the call runs on a
 * helper thread while the statement thread waits interruptibly; on interrupt it asks Python to end
 * the waits of its job group / job tags (ending in {@code LOCK_WAIT_CANCELLED}), then waits for
 * the answer and keeps the interrupt flag. PySpark programs keep the direct call (their Python
 * thread is paired with the JVM thread and has its own cancellation hooks).
 */
final class InterruptibleCall {
  private static final ExecutorService CALLERS =
      Executors.newCachedThreadPool(AwaitCall.daemon("sparklock-call"));

  private InterruptibleCall() {}

  static String run(Supplier<String> call) {
    // A wait whose job group is cancelled with its future jobs ends too (CancelledJobGroups).
    try (CancelledJobGroups.Watch watch = CancelledJobGroups.watchThisThread()) {
      return runInterruptibly(call);
    }
  }

  private static String runInterruptibly(Supplier<String> call) {
    if (!PythonNotices.serving()) {
      return call.get();
    }
    Future<String> answer = CALLERS.submit(call::get);
    return AwaitCall.await(answer,
        () -> PythonNotices.cancelWaitsOfThisThread(
            "a cancellation of the statement (its thread was interrupted: JDBC cancel, "
                + "Connect interrupt, or its session closed)"),
        RuntimeException::new);
  }
}
