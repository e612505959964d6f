package io.sparklock.shim;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Where a locked statement's own time goes on the JVM side, summed over this JVM's statements
 * (tests and benchmarks: {@code tests/benchmarks/narrow_breakdown.py} subtracts two readings).
 *
 * <p>Why: a narrow statement's locking overhead is a few milliseconds spread over the JVM (facts,
 * JSON, the call into Python and back, the re-listing check, the release thread) and Python
 * (parse, policy, the lock manager, ZooKeeper round trips). Python can time its own part; these
 * counters time the JVM's, each piece as the action's thread sees it, so the difference between
 * a call's wall time here and Python's time inside it is the py4j transport and the scheduling
 * of the threads on either end.
 */
final class StatementTimings {
  private StatementTimings() {}

  /** Acquisitions that called Python (those that named nothing are not counted). */
  static final AtomicLong ACQUIRES = new AtomicLong();
  /** Extracting the facts from the plans and writing their JSON. */
  static final AtomicLong FACTS_NANOS = new AtomicLong();
  /** Of those, asking the catalog for the partitions of tables read whole ({@link ReadFacts}). */
  static final AtomicLong CATALOG_NANOS = new AtomicLong();
  /** The acquire call into Python, answer parsed (the action thread waits for it). */
  static final AtomicLong ACQUIRE_NANOS = new AtomicLong();
  /** The re-listing check after the grant ({@link FileListings}), before any job. */
  static final AtomicLong AFTER_GRANT_NANOS = new AtomicLong();
  /** Releases that called Python. */
  static final AtomicLong RELEASES = new AtomicLong();
  /** The release as the action's thread waits for it (the hand-off to the release thread too). */
  static final AtomicLong RELEASE_NANOS = new AtomicLong();
  /** The release call into Python itself, on the release thread. */
  static final AtomicLong RELEASE_CALL_NANOS = new AtomicLong();

  /**
   * The last acquire and release calls' start and end ({@code System.nanoTime()}: on Linux the
   * same monotonic clock as Python's {@code time.monotonic_ns()}), so that a reader timing the
   * Python side can tell the delivery of a call from the return of its answer.
   */
  static volatile long lastAcquireSent;

  static volatile long lastAcquireAnswered;
  static volatile long lastReleaseSent;
  static volatile long lastReleaseAnswered;

  /**
   * {@code acquires=N facts=µs catalog=µs acquire=µs afterGrant=µs releases=N release=µs releaseCall=µs}
   * and the last calls' stamps ({@code lastAcquireSent=ns ...}).
   */
  static String stats() {
    return "acquires=" + ACQUIRES.get()
        + " facts=" + FACTS_NANOS.get() / 1000
        + " catalog=" + CATALOG_NANOS.get() / 1000
        + " acquire=" + ACQUIRE_NANOS.get() / 1000
        + " afterGrant=" + AFTER_GRANT_NANOS.get() / 1000
        + " releases=" + RELEASES.get()
        + " release=" + RELEASE_NANOS.get() / 1000
        + " releaseCall=" + RELEASE_CALL_NANOS.get() / 1000
        + " lastAcquireSent=" + lastAcquireSent
        + " lastAcquireAnswered=" + lastAcquireAnswered
        + " lastReleaseSent=" + lastReleaseSent
        + " lastReleaseAnswered=" + lastReleaseAnswered;
  }
}
