package io.sparklock.shim.util;

import org.apache.spark.sql.SparkSession;

/**
 * The JVM (classic) session behind a {@code SparkSession}: since Spark 4.0 it is
 * {@code org.apache.spark.sql.classic.SparkSession}, a subclass of the API class
 * {@code org.apache.spark.sql.SparkSession} (3.5 has only the classic one, under that name).
 */
public final class ClassicSession {
  private ClassicSession() {}

  public static org.apache.spark.sql.classic.SparkSession of(SparkSession session) {
    return (org.apache.spark.sql.classic.SparkSession) session;
  }

  /** {@code SparkSession.sessionUUID}, or null for a session that is not classic. */
  public static String sessionUUID(SparkSession session) {
    return session instanceof org.apache.spark.sql.classic.SparkSession
        ? ((org.apache.spark.sql.classic.SparkSession) session).sessionUUID()
        : null;
  }
}
