package io.sparklock.shim;

import io.sparklock.shim.listing.FileListings;
import io.sparklock.shim.telemetry.StatementHooks;
import io.sparklock.shim.telemetry.StatementTimings;

/**
 * What tests and benchmarks read from the shim over py4j, kept apart from the bridge's
 * production calls. The statement timers run only once {@link #install} was called (any reading
 * below installs them too), so a first reading may be all zeros: readers subtract two readings.
 */
public final class ShimProbes {
  private ShimProbes() {}

  /** Starts observing statements (idempotent). */
  public static void install() {
    StatementHooks.install(StatementTimings.INSTANCE);
  }

  /**
   * Where locked statements spent their JVM-side time since {@link #install}: {@code
   * acquires=N facts=µs catalog=µs acquire=µs afterGrant=µs releases=N release=µs releaseCall=µs}
   * (sums) and the last calls' stamps (see {@link StatementTimings}).
   */
  public static String timingStats() {
    install();
    return StatementTimings.INSTANCE.stats();
  }

  /** The last facts JSON this JVM sent to acquire since {@link #install} (null before). */
  public static String lastFacts() {
    install();
    return StatementTimings.INSTANCE.lastFacts();
  }

  /**
   * What the re-listing after grants did so far in this JVM, {@code whole=N paths=N fresh=N
   * micros=N} (indexes refreshed whole, partition directories listed, listings found fresh and
   * not listed, time spent on it).
   */
  public static String listingStats() {
    return FileListings.stats();
  }
}
