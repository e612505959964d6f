package io.sparklock.shim.util;

import org.apache.spark.sql.SparkSession;

/**
 * The JVM (classic) session behind a {@code SparkSession}: Spark 3.5 has only the classic one,
 * {@code org.apache.spark.sql.SparkSession} itself (4.0 moved it to {@code sql.classic}).
 */
public final class ClassicSession {
  private ClassicSession() {}

  public static SparkSession of(SparkSession session) {
    return session;
  }

  /** {@code SparkSession.sessionUUID}, or null for a session that is not classic. */
  public static String sessionUUID(SparkSession session) {
    return session.sessionUUID();
  }
}
