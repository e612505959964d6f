package io.sparklock.shim.wire;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.SparkThrowable;

/**
 * A sparklock failure raised in the JVM, a {@link SparkThrowable} like Spark's own errors: its
 * condition ({@code getCondition()}, {@code getErrorClass()} on Spark 3.5) and SQLSTATE come from
 * {@link ErrorCondition}, its message parameters from Python's refusal ({@link Messages.Failure}).
 * That is what the Thrift server hands JDBC/ODBC clients as the SQLSTATE and Spark Connect hands
 * its clients as the condition; PySpark rebuilds sparklock's Python error from
 * {@link #failureJson}. The message is the Python error text verbatim (it starts with the code).
 */
public class SparkLockException extends RuntimeException implements SparkThrowable {
  private static final long serialVersionUID = 1L;

  private final ErrorCondition condition;
  private final Map<String, String> parameters;

  /** A failure raised in the JVM: the message is the condition's name, then {@code detail}. */
  public SparkLockException(ErrorCondition condition, String detail) {
    this(condition, detail, null);
  }

  public SparkLockException(ErrorCondition condition, String detail, Throwable cause) {
    super(condition.name() + ": " + detail, cause);
    this.condition = condition;
    this.parameters = Collections.emptyMap();
  }

  /**
   * A refusal Python answered: its text verbatim, its condition and parameters. It records no
   * Java stack: the refusal is about the user's statement, not a place in the shim, and servers
   * print the stacks of their errors to clients (the Thrift server's asynchronous statements).
   */
  public SparkLockException(String message, Messages.Failure failure) {
    super(message, null, true, false);
    this.condition = ErrorCondition.of(failure == null ? null : failure.condition());
    Map<String, String> p = failure == null || failure.parameters() == null
        ? Map.of() : failure.parameters();
    this.parameters = Collections.unmodifiableMap(new LinkedHashMap<>(p));
  }

  public ErrorCondition condition() {
    return condition;
  }

  /** The condition's name ("LOCK_CONFLICT"). */
  public String code() {
    return condition.name();
  }

  // SparkThrowable: getCondition is Spark 4's name, getErrorClass Spark 3.5's (both kept).
  public String getCondition() {
    return condition.name();
  }

  @SuppressWarnings("deprecation")
  public String getErrorClass() {
    return condition.name();
  }

  public String getSqlState() {
    return condition.sqlState();
  }

  public Map<String, String> getMessageParameters() {
    return parameters;
  }

  public boolean isInternalError() {
    return false;
  }

  /** The condition and parameters as JSON ({@link Messages.Failure}), for PySpark's side. */
  public String failureJson() {
    return Messages.write(new Messages.Failure(condition.name(), parameters));
  }
}
