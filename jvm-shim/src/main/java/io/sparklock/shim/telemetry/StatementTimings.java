package io.sparklock.shim.telemetry;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Where a locked statement's own time goes on the JVM side, summed over this JVM's statements
 * (tests and benchmarks: {@code tests/benchmarks/narrow_breakdown.py} subtracts two readings).
 * An observer of {@link StatementHooks}, installed by {@link ShimProbes} only: production
 * statements pay nothing for it.
 *
 * <p>Why: a narrow statement's locking overhead is a few milliseconds spread over the JVM (facts,
 * JSON, the call into Python and back, the re-listing check, the release thread) and Python
 * (parse, policy, the lock manager, ZooKeeper round trips). Python can time its own part; these
 * counters time the JVM's, each piece as the action's thread sees it, so the difference between
 * a call's wall time here and Python's time inside it is the py4j transport and the scheduling
 * of the threads on either end.
 */
public final class StatementTimings implements StatementHooks.Observer {
  public static final StatementTimings INSTANCE = new StatementTimings();

  private StatementTimings() {}

  /** Acquisitions that called Python (those that named nothing are not counted). */
  private final AtomicLong acquires = new AtomicLong();
  /** Extracting the facts from the plans and writing their JSON. */
  private final AtomicLong factsNanos = new AtomicLong();
  /** Of those, asking the catalog for the partitions of tables read whole ({@link ReadFacts}). */
  private final AtomicLong catalogNanos = new AtomicLong();
  /** The acquire call into Python, answer parsed (the action thread waits for it). */
  private final AtomicLong acquireNanos = new AtomicLong();
  /** The re-listing check after the grant ({@link FileListings}), before any job. */
  private final AtomicLong afterGrantNanos = new AtomicLong();
  /** Releases that called Python. */
  private final AtomicLong releases = new AtomicLong();
  /** The release as the action's thread waits for it (the hand-off to the release thread too). */
  private final AtomicLong releaseNanos = new AtomicLong();
  /** The release call into Python itself, on the release thread. */
  private final AtomicLong releaseCallNanos = new AtomicLong();

  /**
   * The last acquire and release calls' start and end ({@code System.nanoTime()}: on Linux the
   * same monotonic clock as Python's {@code time.monotonic_ns()}), so that a reader timing the
   * Python side can tell the delivery of a call from the return of its answer.
   */
  private volatile long lastAcquireSent;

  private volatile long lastAcquireAnswered;
  private volatile long lastReleaseSent;
  private volatile long lastReleaseAnswered;
  /** The facts JSON of the last acquire call (null before the first). */
  private volatile String lastFacts;

  @Override
  public void factsExtracted(long nanos) {
    factsNanos.addAndGet(nanos);
  }

  @Override
  public void catalogAsked(long nanos) {
    catalogNanos.addAndGet(nanos);
  }

  @Override
  public void acquireCalled(String factsJson, long sentAt, long answeredAt) {
    lastFacts = factsJson;
    lastAcquireSent = sentAt;
    lastAcquireAnswered = answeredAt;
  }

  @Override
  public void acquired(long nanos) {
    acquires.incrementAndGet();
    acquireNanos.addAndGet(nanos);
  }

  @Override
  public void afterGrant(long nanos) {
    afterGrantNanos.addAndGet(nanos);
  }

  @Override
  public void releaseCalled(long sentAt, long answeredAt) {
    lastReleaseSent = sentAt;
    lastReleaseAnswered = answeredAt;
    releaseCallNanos.addAndGet(answeredAt - sentAt);
  }

  @Override
  public void released(long nanos) {
    releases.incrementAndGet();
    releaseNanos.addAndGet(nanos);
  }

  public String lastFacts() {
    return lastFacts;
  }

  /**
   * {@code acquires=N facts=µs catalog=µs acquire=µs afterGrant=µs releases=N release=µs releaseCall=µs}
   * and the last calls' stamps ({@code lastAcquireSent=ns ...}).
   */
  public String stats() {
    return "acquires=" + acquires.get()
        + " facts=" + factsNanos.get() / 1000
        + " catalog=" + catalogNanos.get() / 1000
        + " acquire=" + acquireNanos.get() / 1000
        + " afterGrant=" + afterGrantNanos.get() / 1000
        + " releases=" + releases.get()
        + " release=" + releaseNanos.get() / 1000
        + " releaseCall=" + releaseCallNanos.get() / 1000
        + " lastAcquireSent=" + lastAcquireSent
        + " lastAcquireAnswered=" + lastAcquireAnswered
        + " lastReleaseSent=" + lastReleaseSent
        + " lastReleaseAnswered=" + lastReleaseAnswered;
  }
}
