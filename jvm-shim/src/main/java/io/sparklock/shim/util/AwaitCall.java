package io.sparklock.shim.util;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.function.Function;

/**
 * Waits for a call into Python made on a thread of the shim's own: the answer must be read
 * whatever interrupts the waiting thread (a lock taken or released in Python must be known
 * here), so an interrupt is noted, handed to {@code onInterrupt} once, and restored after.
 */
public final class AwaitCall {
  private AwaitCall() {}

  /** Daemon threads named {@code name}: the calls they make never keep the JVM alive. */
  public static ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }

  public static <T> T await(Future<T> answer, Runnable onInterrupt,
      Function<Throwable, RuntimeException> checkedFailure) {
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return answer.get();
        } catch (InterruptedException e) {
          if (!interrupted) {
            interrupted = true;
            onInterrupt.run();
          }
        } catch (ExecutionException e) {
          Throwable cause = e.getCause();
          if (cause instanceof RuntimeException) {
            throw (RuntimeException) cause;
          }
          if (cause instanceof Error) {
            throw (Error) cause;
          }
          throw checkedFailure.apply(cause);
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
