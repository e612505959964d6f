package io.sparklock.shim.telemetry;

import org.apache.spark.scheduler.SparkListenerEvent;

/**
 * Posted when a statement's locks are released (see {@link SparkListenerLockGranted}).
 *
 * @param time epoch milliseconds of the release
 * @param executionId the SQL execution that held the locks
 * @param handle the handle released
 * @param lockCount how many locks were held
 * @param heldNs how long they were held (grant to release)
 * @param error null when released; else the failure ({@code LOCKS_LOST: ...},
 *     {@code UNLOCK_FAILED: ...}), also then the hold has ended for the statement
 */
public record SparkListenerLockReleased(
    long time, Long executionId, String handle, int lockCount, long heldNs, String error)
    implements SparkListenerEvent {}
