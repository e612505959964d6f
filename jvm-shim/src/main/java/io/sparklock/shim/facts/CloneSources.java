package io.sparklock.shim.facts;

import io.sparklock.shim.util.ScalaInterop;
import io.sparklock.shim.wire.Facts.ObjectRef;
import io.sparklock.shim.wire.Facts;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

/**
 * What Delta's {@code CLONE} reads. Its {@code CloneTableCommand} sits in
 * {@code CreateDeltaTableCommand.query} and names its source as a {@code CloneSource} (a Delta
 * table, a Parquet or Iceberg table or path), not as a relation: the source is reported as a
 * read here, so it is locked SHARED like any table a statement reads. Read by method name (Delta
 * is optional on the classpath), as in Delta 3.3 and 4.4.
 */
final class CloneSources {
  private CloneSources() {}

  static final String CLONE_COMMAND = "org.apache.spark.sql.delta.commands.CloneTableCommand";

  static boolean isClone(LogicalPlan plan) {
    return plan.getClass().getName().equals(CLONE_COMMAND);
  }

  /**
   * The catalog table of the clone's source, else the path it reads (the table owning that
   * path, if any). Unreadable: an error, so the statement fails closed rather than run with its
   * source unlocked.
   */
  static ObjectRef sourceOf(LogicalPlan clone, Refs refs) {
    Object source = Refs.invoke(clone, "sourceTable");
    Object table = source == null
        ? null : ScalaInterop.unwrapOption(Refs.invoke(source, "catalogTable"));
    if (table instanceof CatalogTable t) {
      return refs.tableRef(t, false);
    }
    Object path = source == null ? null : Refs.invoke(source, "dataPath");
    if (path == null) {
      throw new IllegalStateException("cannot read the source of Delta's CLONE ("
          + (source == null ? "no sourceTable" : source.getClass().getName()) + ")");
    }
    return refs.pathRef(path.toString());
  }
}
