package io.sparklock.shim.facts;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;

/**
 * Iceberg names more than tables in a catalog: {@code ice.db.t.snapshots} (a metadata table) and
 * {@code ice.db.t.branch_b}, {@code .tag_t}, {@code .snapshot_id_N}, {@code .at_timestamp_N} (a
 * snapshot of the table) are loaded by Iceberg's catalog as relations of their own, whose
 * identifier's last namespace part is the table. What they read or write is that base table, so
 * that is the object reported. Iceberg is optional: its classes are recognised by name.
 */
final class IcebergTables {
  static final String SPARK_TABLE = "org.apache.iceberg.spark.source.SparkTable";
  static final String METADATA_TABLE = "org.apache.iceberg.BaseMetadataTable";
  static final String ROW_LEVEL_OPERATION =
      "org.apache.spark.sql.connector.write.RowLevelOperationTable";
  private static final String[] SELECTORS = {"branch_", "tag_", "snapshot_id_", "at_timestamp_"};

  private IcebergTables() {}

  /** The base table's identifier for a metadata table or a snapshot selector, else {@code id}. */
  static Identifier base(Table table, Identifier id) {
    if (table != null && table.getClass().getName().equals(ROW_LEVEL_OPERATION)) {
      Object wrapped = Refs.invoke(table, "table"); // DELETE/UPDATE/MERGE's view of the table
      table = wrapped instanceof Table t ? t : table;
    }
    if (id == null || id.namespace().length < 2 || !extendsClass(table, SPARK_TABLE)) {
      return id;
    }
    if (!extendsClass(Refs.invoke(table, "table"), METADATA_TABLE) && !isSelector(id.name())) {
      return id;
    }
    String[] ns = id.namespace();
    return Identifier.of(Arrays.copyOf(ns, ns.length - 1), ns[ns.length - 1]);
  }

  /**
   * The identity partition columns a write may be pinned by: the table's, and of an Iceberg
   * table only those that every partition spec it ever had partitions by identity (files of an
   * older spec, unpartitioned by the column, hold rows of several of its values, and a rewrite
   * of one replaces them all).
   */
  static List<String> pinnableColumns(Table table) {
    if (table != null && table.getClass().getName().equals(ROW_LEVEL_OPERATION)) {
      Object wrapped = Refs.invoke(table, "table");
      table = wrapped instanceof Table t ? t : table;
    }
    List<String> columns = new ArrayList<>(Refs.identityColumns(table));
    if (!extendsClass(table, SPARK_TABLE)) {
      return columns;
    }
    Object iceberg = Refs.invoke(table, "table");
    Object specs = iceberg == null ? null : Refs.invoke(iceberg, "specs");
    Object schema = iceberg == null ? null : Refs.invoke(iceberg, "schema");
    if (!(specs instanceof Map<?, ?> all) || schema == null) {
      return List.of();
    }
    for (Object spec : all.values()) {
      Set<String> identity = new HashSet<>();
      if (!(Refs.invoke(spec, "fields") instanceof List<?> fields)) {
        return List.of();
      }
      for (Object f : fields) {
        Object transform = Refs.invoke(f, "transform");
        if ("identity".equals(String.valueOf(transform))) { // Iceberg's Identity transform
          identity.add(sourceName(schema, f));
        }
      }
      columns.removeIf(c -> !identity.contains(c.toLowerCase(Locale.ROOT)));
    }
    return columns;
  }

  private static String sourceName(Object schema, Object field) {
    try {
      Object id = field.getClass().getMethod("sourceId").invoke(field);
      Object name = schema.getClass().getMethod("findColumnName", int.class).invoke(schema, id);
      return String.valueOf(name).toLowerCase(Locale.ROOT);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return "";
    }
  }

  private static boolean isSelector(String name) {
    String n = name.toLowerCase(Locale.ROOT);
    return Arrays.stream(SELECTORS).anyMatch(n::startsWith);
  }

  private static boolean extendsClass(Object o, String className) {
    for (Class<?> c = o == null ? null : o.getClass(); c != null; c = c.getSuperclass()) {
      if (c.getName().equals(className)) {
        return true;
      }
    }
    return false;
  }
}
