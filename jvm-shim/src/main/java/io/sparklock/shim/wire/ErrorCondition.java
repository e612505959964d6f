package io.sparklock.shim.wire;

/**
 * sparklock's error conditions and their SQLSTATEs, the same list as
 * {@code sparklock/failures.py}'s {@code Condition} (a Spark test checks they are equal).
 * A {@link SparkLockException} carries one, so Spark's servers report it as they report Spark's
 * own error classes: the Thrift server as the SQLSTATE of the JDBC/ODBC error, Spark Connect as
 * the error's condition.
 */
public enum ErrorCondition {
  LOCK_CONFLICT("55P03"),
  LOCK_DEADLOCK("40P01"),
  LOCK_WAIT_CANCELLED("57014"),
  LOCKS_LOST("40003"),
  INVALID_CONFIG("22022"),
  LOCK_MANAGER_UNAVAILABLE("08001"),
  NOT_LOCKED("55000"),
  UNLOCK_NOT_OWNER("42501"),
  UNLOCK_FAILED("58000"),
  INVALID_LOCK_OBJECT("42602"),
  SPARKLOCK_NOT_ATTACHED("55000"),
  SPARKLOCK_SETUP_FAILED("55000"),
  SHIM_BUILD_FAILED("58000"),
  UNSUPPORTED_STATEMENT("0A000"),
  LOCK_SERVICE_UNREACHABLE("08006"),
  LOCK_SERVICE_PROTOCOL("XX000"),
  LOCK_SERVICE_ERROR("XX000"),
  LOCK_FACTS_FAILED("XX000"),
  SPARKLOCK_ERROR("XX000");

  private final String sqlState;

  ErrorCondition(String sqlState) {
    this.sqlState = sqlState;
  }

  public String sqlState() {
    return sqlState;
  }

  /** The condition named {@code name}; an unknown (or null) name is {@link #SPARKLOCK_ERROR}. */
  public static ErrorCondition of(String name) {
    if (name != null) {
      for (ErrorCondition c : values()) {
        if (c.name().equals(name)) {
          return c;
        }
      }
    }
    return SPARKLOCK_ERROR;
  }
}
