package io.sparklock.shim.hook;

import org.apache.spark.sql.SparkSessionExtensions;

/**
 * {@code CALL} of a catalog's stored procedure, as of Spark 3.5: there is none (no {@code Call}
 * plan, no procedure catalogs), so nothing to register. The Spark 4.0+
 * variant runs a CALL's procedure holding its locks (jvm-shim/BRIDGE.md, "CALL").
 */
public final class ProcedureCalls {
  private ProcedureCalls() {}

  /** Nothing to inject on this Spark line. */
  public static void register(SparkSessionExtensions ext) {}
}
