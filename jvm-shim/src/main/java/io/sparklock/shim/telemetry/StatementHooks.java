package io.sparklock.shim.telemetry;

import java.util.Arrays;

/**
 * Where tests and benchmarks observe a locked statement's JVM-side phases, off the production
 * path: with no observer installed every hook is one volatile read ({@link #now} does not even
 * read the clock), and only {@link ShimProbes} installs one.
 */
public final class StatementHooks {
  private StatementHooks() {}

  /** What an observer hears; durations and stamps are {@code System.nanoTime()} based. */
  interface Observer {
    /** Extracting facts from the plans, or writing their JSON (two calls per statement). */
    public default void factsExtracted(long nanos) {}

    /** Of the facts, asking the catalog for a table's partitions ({@link ReadFacts}). */
    public default void catalogAsked(long nanos) {}

    /** One acquire call into Python: what was sent, when it left and when it was answered. */
    public default void acquireCalled(String factsJson, long sentAt, long answeredAt) {}

    /** An acquire as the action's thread waited for it, answer parsed. */
    public default void acquired(long nanos) {}

    /** The re-listing check after a grant ({@link FileListings}). */
    public default void afterGrant(long nanos) {}

    /** One release call into Python, on the release thread. */
    public default void releaseCalled(long sentAt, long answeredAt) {}

    /** A release as the action's thread waited for it (the hand-off included). */
    public default void released(long nanos) {}
  }

  private static final Observer[] NONE = new Observer[0];

  private static volatile Observer[] observers = NONE;

  /** Adds {@code observer} once (an observer already installed is not added again). */
  public static synchronized void install(Observer observer) {
    if (!Arrays.asList(observers).contains(observer)) {
      Observer[] more = Arrays.copyOf(observers, observers.length + 1);
      more[observers.length] = observer;
      observers = more;
    }
  }

  /** A start stamp for the hooks below: 0, without reading the clock, when nobody observes. */
  public static long now() {
    return observers.length == 0 ? 0 : System.nanoTime();
  }

  public static void factsExtracted(long since) {
    elapsed(since, Observer::factsExtracted);
  }

  public static void catalogAsked(long since) {
    elapsed(since, Observer::catalogAsked);
  }

  public static void acquireCalled(String factsJson, long sentAt) {
    elapsed(sentAt, (o, nanos) -> o.acquireCalled(factsJson, sentAt, sentAt + nanos));
  }

  /** {@code nanos}: measured anyway by the caller (the metrics need it), so always passed. */
  public static void acquired(long nanos) {
    for (Observer o : observers) {
      o.acquired(nanos);
    }
  }

  public static void afterGrant(long since) {
    elapsed(since, Observer::afterGrant);
  }

  public static void releaseCalled(long sentAt) {
    elapsed(sentAt, (o, nanos) -> o.releaseCalled(sentAt, sentAt + nanos));
  }

  public static void released(long since) {
    elapsed(since, Observer::released);
  }

  /** One event's delivery: what it tells an observer, given the time elapsed since its stamp. */
  private interface Event {
    void tell(Observer observer, long nanos);
  }

  private static void elapsed(long since, Event event) {
    Observer[] all = observers;
    if (all.length > 0 && since != 0) {
      long nanos = System.nanoTime() - since;
      for (Observer o : all) {
        event.tell(o, nanos);
      }
    }
  }
}
