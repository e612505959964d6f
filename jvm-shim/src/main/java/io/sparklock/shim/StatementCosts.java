package io.sparklock.shim;

import java.util.concurrent.atomic.AtomicLong;

/**
 * What the JVM side of locked statements cost so far in this JVM, by phase, for benchmarks and
 * profiling (a wide read's overhead is spread over the facts, their JSON, the call into Python
 * and the release; only side-by-side figures say which one to cut). Cumulative nanoseconds,
 * read with {@link SparkLockBridge#statementCosts()}.
 */
final class StatementCosts {
  private StatementCosts() {}

  /** Facts extracted (calls into FactsExtractor for a statement about to acquire). */
  static final AtomicLong FACTS = new AtomicLong();
  /** Of those, asking the catalog for every partition of a table read whole. */
  static final AtomicLong CATALOG = new AtomicLong();
  /** The facts written as JSON. */
  static final AtomicLong JSON = new AtomicLong();
  /** The acquire call into Python (round trip: transfer, Python's work, the answer read). */
  static final AtomicLong ACQUIRE = new AtomicLong();
  /** The release call into Python, as the action's thread waits for it. */
  static final AtomicLong RELEASE = new AtomicLong();
  /** Statements counted (acquire calls). */
  static final AtomicLong STATEMENTS = new AtomicLong();

  /** {@code statements=N facts=µs catalog=µs json=µs acquire=µs release=µs}. */
  static String text() {
    return "statements=" + STATEMENTS.get() + " facts=" + FACTS.get() / 1000
        + " catalog=" + CATALOG.get() / 1000 + " json=" + JSON.get() / 1000
        + " acquire=" + ACQUIRE.get() / 1000 + " release=" + RELEASE.get() / 1000;
  }

  /** Adds the time since {@code startNanos} to {@code counter}; returns now. */
  static long since(AtomicLong counter, long startNanos) {
    long now = System.nanoTime();
    counter.addAndGet(now - startNanos);
    return now;
  }
}
