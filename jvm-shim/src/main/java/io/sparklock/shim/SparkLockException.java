package io.sparklock.shim;

/**
 * A sparklock failure raised in the JVM; its message is the Python error text verbatim (it starts
 * with a code such as {@code LOCK_CONFLICT:}), so the Python user sees it in the raised exception.
 */
public class SparkLockException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public SparkLockException(String message) {
    super(message);
  }

  public SparkLockException(String message, Throwable cause) {
    super(message, cause);
  }

  /** The stable upper-case code the message starts with ("LOCK_CONFLICT"), or "" if none. */
  public String code() {
    String m = getMessage();
    if (m == null) {
      return "";
    }
    int i = m.indexOf(':');
    return i > 0 && m.substring(0, i).matches("[A-Z][A-Z_]*") ? m.substring(0, i) : "";
  }
}
