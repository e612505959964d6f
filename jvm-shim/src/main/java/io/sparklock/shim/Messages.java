package io.sparklock.shim;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.Map;

/**
 * The callback's answers and the lock-statement request (BRIDGE.md), typed once and read/written
 * with Jackson. {@code sparklock/messages.py} holds the same shapes as dataclasses (a Spark test
 * checks the field names are equal: wire name = camelCase of the Python field). The facts are
 * {@link Facts}' business.
 */
public final class Messages {
  private Messages() {}

  /** Reads and writes the bridge's JSON (unknown answer fields ignored: Python may add some). */
  static final ObjectMapper JSON =
      new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

  /** What every answer has: {@code ok}, and the error text (starting with its code) when not. */
  public interface Answer {
    boolean ok();

    String error();
  }

  /** {@code release}'s answer (and any refusal). */
  public record Done(boolean ok, String error) implements Answer {}

  /**
   * {@code acquire}'s answer: the handle to release ("" when nothing was locked), whether to
   * re-list the files the statement reads ({@code spark.sparklock.read.refreshListing}, a key
   * Python owns and validated; absent = true), and for the metrics and events
   * ({@link LockTelemetry}) how many locks were granted and how long getting them took (absent:
   * 0 locks, and the JVM's own measure of the call), and the write epochs of the tables read
   * ({@link ReadEpochs}; absent: re-list them all). {@code leaseEpoch}: the ZooKeeper session the
   * locks belong to, {@code leaseUntilNs} until when ({@code System.nanoTime()}) they are
   * certainly held ({@link Lease}); absent: locks that cannot lapse (embedded).
   */
  public record Acquired(boolean ok, String error, String handle, Boolean refreshListing,
      Integer lockCount, Long waitedNs, ReadEpochs readEpochs, Long leaseEpoch,
      Long leaseUntilNs) implements Answer {
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
   * {@code command}'s and {@code explain}'s answer: rows of strings, in {@code columns} order
   * (empty {@code columns}: in the order the statement shows them).
   */
  public record Rows(boolean ok, String error, List<String> columns, List<List<String>> rows)
      implements Answer {}

  /** What a lock statement names: a database ({@code table} null) or a table/partition. */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  public record LockTarget(String database, String table, List<List<String>> partition) {}

  /**
   * A SHOW LOCKS / LOCK / UNLOCK request, resolved by the JVM. {@code columns}: the SHOW LOCKS
   * columns to answer, by name (the JVM owns the result schema); {@code jobGroup}/{@code jobTags}:
   * what a cancellation of a LOCK wait matches; {@code user}/{@code clientAddress}/{@code agent}:
   * who locks (as in the facts).
   */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  public record CommandRequest(
      String statement,
      String session,
      Map<String, String> conf,
      List<String> columns,
      LockTarget object,
      String mode,
      String sql,
      String jobGroup,
      List<String> jobTags,
      String user,
      String clientAddress,
      String reason,
      String serverSession,
      String agent) {

    /** A server's request about its sessions (CANCEL_WAITS, SESSION_CLOSED), no SQL object. */
    static CommandRequest ofServer(String statement, String session, String jobGroup,
        List<String> jobTags, String reason, String serverSession) {
      return new CommandRequest(statement, session, null, null, null, null, null, jobGroup,
          jobTags, null, null, reason, serverSession, null);
    }
  }

  /**
   * What only Python sees, for the metrics ({@link LockTelemetry#report}, a JSON array of these):
   * {@code event} is {@code RELEASE_RETRIED} / {@code LOCKS_LOST} ({@code count} of them) or
   * {@code ZOOKEEPER_STATE} ({@code detail}: kazoo's state, {@code CONNECTED}, ...).
   */
  public record Report(String event, long count, String detail) {}

  /** {@code value} as JSON text. */
  static String write(Object value) {
    try {
      return JSON.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new SparkLockException("LOCK_SERVICE_PROTOCOL: cannot write " + value + ": " + e, e);
    }
  }

  /** The first 200 characters of {@code s} (for error messages). */
  static String abbreviate(String s) {
    if (s == null) {
      return "null";
    }
    return s.length() <= 200 ? s : s.substring(0, 200) + "...";
  }
}
