package io.sparklock.shim.telemetry;

import org.apache.spark.scheduler.SparkListenerEvent;

/**
 * Posted when a statement (or a {@code LOCK TABLE}) does not get its locks: it ran out of budget
 * ({@code LOCK_CONFLICT}), its wait was cancelled ({@code LOCK_WAIT_CANCELLED}) or the lock
 * service failed (see {@link SparkListenerLockGranted}).
 *
 * @param time epoch milliseconds of the refusal
 * @param executionId the SQL execution refused (null for {@code LOCK TABLE})
 * @param statement the statement's text (first 500 characters), when known
 * @param errorCode the error's code ({@code LOCK_CONFLICT}, ...)
 * @param error the error text the statement fails with (names the holders of a conflict)
 * @param waitedNs how long it waited before it was refused
 */
public record SparkListenerLockRefused(
    long time, Long executionId, String statement, String errorCode, String error, long waitedNs)
    implements SparkListenerEvent {}
