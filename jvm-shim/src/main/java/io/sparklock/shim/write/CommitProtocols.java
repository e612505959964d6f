package io.sparklock.shim.write;

import io.sparklock.shim.wire.ErrorCondition;
import io.sparklock.shim.wire.SparkLockException;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.command.DataWritingCommandExec;

/**
 * A file write refused when its session changed {@value #KEY} at runtime ({@code SET}, {@code
 * spark.conf.set}) away from the lease-checking protocol the session started with
 * (docs/fencing.md). That protocol is the only place a file write's job commit checks the
 * lease; a protocol swapped in later would publish under a lapsed lease, so the write is
 * refused before it runs rather than left to job cancellation. A protocol of the user's own
 * named when the session started is kept (its commits are covered by cancellation only).
 */
public final class CommitProtocols {
  /** Spark's key naming the file commit protocol. */
  public static final String KEY = "spark.sql.sources.commitProtocolClass";

  /** The protocol {@code sparklock.configure} sets (the lease checked before the job commit). */
  public static final String LEASE_PROTOCOL = "io.sparklock.shim.LeaseCommitProtocol";

  private CommitProtocols() {}

  /** Throws {@code INVALID_CONFIG} when {@code plan} writes files under a swapped protocol. */
  public static void check(SparkPlan plan) {
    if (!(plan instanceof DataWritingCommandExec)) {
      return;
    }
    String started = plan.sparkContext().conf().get(KEY, null);
    if (!LEASE_PROTOCOL.equals(started)) {
      return; // the session started with the user's own protocol (or without sparklock's)
    }
    String now = plan.conf().getConfString(KEY, LEASE_PROTOCOL);
    if (LEASE_PROTOCOL.equals(now)) {
      return;
    }
    throw new SparkLockException(ErrorCondition.INVALID_CONFIG, KEY + " was set to " + now
        + " in this session after it started: sparklock checks a file write's lease at its job "
        + "commit only through " + LEASE_PROTOCOL + ", so this write is refused. RESET " + KEY
        + " (or set it back to " + LEASE_PROTOCOL + "); a protocol of your own must be named "
        + "when the session is built (then its commits are covered by job cancellation only, "
        + "see docs/fencing.md)");
  }
}
