package io.sparklock.shim.wire;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.Map;

/**
 * The callback's answers and requests (BRIDGE.md), one type per call, typed once and read/written
 * with Jackson. {@code sparklock/protocol/messages.py} holds the same shapes as dataclasses (a
 * Spark test checks the field names are equal: wire name = camelCase of the Python field). The
 * facts are {@link Facts}' business.
 */
public final class Messages {
  private Messages() {}

  /** Reads and writes the bridge's JSON (unknown answer fields ignored: Python may add some). */
  public static final ObjectMapper JSON =
      new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

  /**
   * What every answer has: {@code ok}, and when not the error text (starting with its code) and
   * its {@link Failure}.
   */
  public interface Answer {
    boolean ok();

    String error();

    Failure failure();
  }

  /**
   * A refusal's condition ({@link ErrorCondition}'s name) and message parameters, which
   * {@link SparkLockException} reports as a {@code SparkThrowable}'s.
   */
  public record Failure(String condition, Map<String, String> parameters) {}

  /** {@code release}'s answer (and any refusal). */
  public record Done(boolean ok, String error, Failure failure) implements Answer {}

  /**
   * {@code acquire}'s answer: the handle to release ("" when nothing was locked), whether to
   * re-list the files the statement reads ({@code spark.sparklock.read.refreshListing}, a key
   * Python owns and validated; absent = true), and for the metrics and events
   * ({@link LockTelemetry}) how many locks were granted and how long getting them took (absent:
   * 0 locks, and the JVM's own measure of the call), and the write epochs of the tables read
   * ({@link ReadEpochs}; absent: re-list them all). {@code leaseEpoch}: the lease the locks were
   * granted under (a ZooKeeper session id; a metastore statement's negative term id),
   * {@code leaseUntilNs} until when ({@code System.nanoTime()}) they are
   * certainly held ({@link Lease}); absent: locks that cannot lapse (embedded).
   */
  public record Acquired(boolean ok, String error, Failure failure, String handle,
      Boolean refreshListing, Integer lockCount, Long waitedNs, ReadEpochs readEpochs,
      Long leaseEpoch, Long leaseUntilNs) implements Answer {
    @Override
    public Boolean refreshListing() {
      return refreshListing == null || refreshListing;
    }
  }

  /**
   * The write epochs of the tables a granted statement reads, taken after the grant
   * ({@code sparklock/service/epochs.py}): {@link FileListings} re-lists only what has another
   * epoch than when it was listed. {@code clock}: the foreign-write clock reading the values
   * belong to (null: unknown, re-list every listing read and remember none).
   */
  public record ReadEpochs(String clock, List<TableEpochs> tables) {}

  /**
   * One table read, {@code facts.reads[read]}: {@code whole} changes with any write in it,
   * {@code base} with a write of all of it; the partition at {@code indexes[i]} of the read's
   * {@code partitions} has epoch {@code epochs[i]}, every other one {@code base}.
   */
  public record TableEpochs(
      int read, long whole, long base, List<Integer> indexes, List<Long> epochs) {}

  /**
   * {@code showLocks}'s answer: every lock (and waiting request) asked for, each a {@link LockRow}
   * whatever columns the statement shows.
   */
  public record Locks(boolean ok, String error, Failure failure, List<LockRow> locks)
      implements Answer {}

  /**
   * One lock as SHOW LOCKS shows it; the components, in order and in snake_case, are the
   * EXTENDED columns ({@link RecordColumns}), so a new column is one component here and one field
   * in Python. All text: {@code lockTime}, {@code acquiredAt} and {@code waitSince} are epoch
   * milliseconds ("" when none); {@code state} is ACQUIRED or WAITING; {@code alive} is true,
   * false or unknown (whether the owner's driver still lives). New components go last: a
   * script reading EXTENDED rows by position keeps working.
   */
  public record LockRow(String name, String mode, String queryId, String lockTime,
      String lockType, String queryString, String client, String user, String state,
      String blockedBy, String acquiredAt, String waitSince, String agent, String alive) {}

  /** {@code explain}'s answer: the locks the statement would take, in acquisition order. */
  public record Explained(boolean ok, String error, Failure failure, List<PlannedLock> locks)
      implements Answer {}

  /** One lock EXPLAIN LOCKS shows (its columns, as {@link LockRow}'s for SHOW LOCKS). */
  public record PlannedLock(String name, String mode) {}

  /**
   * What a lock statement names: a database ({@code table} null) or a table/partition. An object
   * of another catalog has its {@code catalog} and {@code namespace} parts (a namespace when
   * {@code table} is null); {@code database} then shows the namespace as Spark quotes it.
   */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  public record LockTarget(String database, String table, List<List<String>> partition,
      String catalog, List<String> namespace) {
    /** An object of the session catalog (Hive's database, table or partition). */
    public LockTarget(String database, String table, List<List<String>> partition) {
      this(database, table, partition, null, null);
    }
  }

  /** SHOW LOCKS [object]: the locks on {@code object} and below (null: every lock). */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  public record ShowLocksRequest(String session, Map<String, String> conf, LockTarget object) {}

  /**
   * LOCK TABLE / DATABASE. {@code jobGroup}/{@code jobTags}: what a cancellation of its wait
   * matches; {@code user}/{@code clientAddress}/{@code agent}: who locks (as in the facts).
   */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  public record ExplicitLockRequest(String session, Map<String, String> conf, LockTarget object,
      String mode, String sql, String jobGroup, List<String> jobTags, String user,
      String clientAddress, String agent) {}

  /** UNLOCK TABLE / DATABASE, and who asks (the unlock policy decides whether they may). */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  public record UnlockRequest(String session, Map<String, String> conf, LockTarget object,
      String user, String clientAddress, String agent) {}

  /**
   * A server's statement thread was interrupted while it waited for locks: end the waits of its
   * job group, else of its Connect operation tags among {@code jobTags}.
   */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  public record CancelWaitsRequest(String jobGroup, List<String> jobTags, String reason) {}

  /**
   * A server session ended: end its Spark session's waits and apply
   * {@code spark.sparklock.explicit.onSessionClose} to its LOCK TABLE locks.
   * {@code serverSession}: {@code thrift:<id>} or {@code connect:<id>}, for the logs.
   */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  public record SessionClosedRequest(String session, String serverSession) {}

  /**
   * What only Python sees, for the metrics ({@link LockTelemetry#report}, a JSON array of these):
   * {@code event} is {@code RELEASE_RETRIED} / {@code LOCKS_LOST} ({@code count} of them) or
   * {@code BACKEND_STATE} (a backend's gauge: {@code detail} its name, {@code count} its value).
   */
  public record Report(String event, long count, String detail) {}

  /** {@code value} as JSON text. */
  public static String write(Object value) {
    try {
      return JSON.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new SparkLockException(ErrorCondition.LOCK_SERVICE_PROTOCOL,
          "cannot write " + value + ": " + e, e);
    }
  }

  /** The first 200 characters of {@code s} (for error messages). */
  public static String abbreviate(String s) {
    if (s == null) {
      return "null";
    }
    return s.length() <= 200 ? s : s.substring(0, 200) + "...";
  }
}
