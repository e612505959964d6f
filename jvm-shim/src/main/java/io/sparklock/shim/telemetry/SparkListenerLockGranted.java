package io.sparklock.shim.telemetry;

import org.apache.spark.scheduler.SparkListenerEvent;

/**
 * Posted to the listener bus when a statement's locks (or a {@code LOCK TABLE}) are granted, so
 * event logs and the History Server keep it (Spark writes unknown events with Jackson, with the
 * class name as {@code "Event"}).
 *
 * @param time epoch milliseconds of the grant
 * @param executionId the SQL execution that took the locks (null for {@code LOCK TABLE})
 * @param handle what the release names (null for {@code LOCK TABLE})
 * @param statement the statement's text (first 500 characters), when known
 * @param lockCount how many locks were granted
 * @param waitedNs how long it took to get them (the wait behind other holders included)
 */
public record SparkListenerLockGranted(
    long time, Long executionId, String handle, String statement, int lockCount, long waitedNs)
    implements SparkListenerEvent {}
