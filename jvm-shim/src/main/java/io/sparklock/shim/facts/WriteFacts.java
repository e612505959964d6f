package io.sparklock.shim.facts;

import io.sparklock.shim.util.ScalaInterop;
import io.sparklock.shim.wire.Facts.ObjectRef;
import io.sparklock.shim.wire.Facts.TableRef;
import io.sparklock.shim.wire.Facts.WriteRef;
import io.sparklock.shim.wire.Facts;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.catalyst.analysis.NamedRelation;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.AppendData;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OverwriteByExpression;
import org.apache.spark.sql.catalyst.plans.logical.OverwritePartitionsDynamic;
import org.apache.spark.sql.execution.datasources.InsertIntoDataSourceCommand;
import org.apache.spark.sql.execution.datasources.InsertIntoHadoopFsRelationCommand;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;

/**
 * Writes: the table or path each insert-like node writes, with its static partition (in column
 * order), its dynamic columns and whether it overwrites. Hive's insert is read reflectively
 * (spark-hive is optional on the classpath).
 */
final class WriteFacts {
  private static final String INSERT_INTO_HIVE_TABLE =
      "org.apache.spark.sql.hive.execution.InsertIntoHiveTable";

  private final Refs refs;

  WriteFacts(Refs refs) {
    this.refs = refs;
  }

  List<WriteRef> collect(LogicalPlan analyzed) {
    List<WriteRef> writes = new ArrayList<>();
    FactsExtractor.walkPlan(analyzed, p -> {
      WriteRef w = writeOf(p);
      if (w != null) {
        writes.add(w);
      }
    });
    return writes;
  }

  /** The write one plan node makes, or null when it writes nothing we know of. */
  WriteRef writeOf(LogicalPlan p) {
    if (p instanceof InsertIntoHadoopFsRelationCommand c) {
      List<String> partCols = new ArrayList<>();
      for (Attribute a : ScalaInterop.list(c.partitionColumns())) {
        partCols.add(a.name());
      }
      boolean byPath = !c.catalogTable().isDefined();
      ObjectRef target = byPath
          ? refs.pathRef(c.outputPath().toString())
          : refs.tableRef(c.catalogTable().get(), false);
      Map<String, String> statics = ScalaInterop.map(c.staticPartitions());
      return write(target, byPath ? partCols : null, partCols, statics,
          c.mode() == SaveMode.Overwrite, c.dynamicPartitionOverwrite(), true);
    }
    if (p.getClass().getName().equals(INSERT_INTO_HIVE_TABLE)) {
      return hiveWrite(p);
    }
    if (p instanceof InsertIntoDataSourceCommand c) {
      LogicalRelation lr = c.logicalRelation();
      if (!lr.catalogTable().isDefined()) {
        return null;
      }
      TableRef target = refs.tableRef(lr.catalogTable().get(), false);
      return write(target, null, target.partitionColumns(), Map.of(), c.overwrite(), false, false);
    }
    String cls = p.getClass().getSimpleName();
    if (cls.equals("InsertIntoDataSourceDirCommand") || cls.equals("InsertIntoHiveDirCommand")) {
      // INSERT OVERWRITE [LOCAL] DIRECTORY: a write to a path (its owner table, if any)
      Object storage = Refs.invoke(p, "storage");
      Object uri = storage == null ? null : Refs.invoke(storage, "locationUri");
      if (!(uri instanceof scala.Option) || !((scala.Option<?>) uri).isDefined()) {
        return null;
      }
      ObjectRef target = refs.pathRef(((scala.Option<?>) uri).get().toString());
      return write(target, List.of(), List.of(), Map.of(),
          Boolean.TRUE.equals(Refs.invoke(p, "overwrite")), false, true);
    }
    if (p instanceof AppendData a) {
      return v2Write(a.table(), false, false, V2Constraints.append(a));
    }
    if (p instanceof OverwriteByExpression o) {
      return v2Write(o.table(), true, false, V2Constraints.overwrite(refs.session, o));
    }
    if (p instanceof OverwritePartitionsDynamic o) {
      return v2Write(o.table(), true, true, V2Constraints.dynamic(o));
    }
    return null;
  }

  /** InsertIntoHiveTable(table, partition: Map[String, Option[String]], query, overwrite, ...). */
  @SuppressWarnings("unchecked")
  private WriteRef hiveWrite(LogicalPlan p) {
    try {
      CatalogTable table = (CatalogTable) p.getClass().getMethod("table").invoke(p);
      scala.collection.Map<String, scala.Option<String>> partition =
          (scala.collection.Map<String, scala.Option<String>>)
              p.getClass().getMethod("partition").invoke(p);
      boolean overwrite = (Boolean) p.getClass().getMethod("overwrite").invoke(p);
      TableRef target = refs.tableRef(table, false);
      Map<String, String> statics = new LinkedHashMap<>();
      ScalaInterop.map(partition).forEach((k, v) -> {
        if (v.isDefined()) {
          statics.put(k, v.get());
        }
      });
      return write(target, null, target.partitionColumns(), statics, overwrite, false, true);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot read InsertIntoHiveTable: " + e, e);
    }
  }

  private WriteRef v2Write(NamedRelation target, boolean overwrite, boolean dynamic,
      Map<String, List<String>> rowConstraints) {
    if (!(target instanceof DataSourceV2Relation r)) {
      return null;
    }
    ObjectRef ref = refs.v2Ref(r);
    List<String> partCols = ref instanceof TableRef t ? t.partitionColumns() : List.of();
    return new WriteRef(ref, null, new LinkedHashMap<>(), partCols, overwrite, dynamic,
        Refs.isFileTable(r.table()), rowConstraints);
  }

  /** A write whose static partition and dynamic columns split {@code partCols} by {@code st}. */
  private static WriteRef write(
      ObjectRef target,
      List<String> ownPartitionColumns,
      List<String> partCols,
      Map<String, String> st,
      boolean overwrite,
      boolean dynamicPartitionOverwrite,
      boolean fileBased) {
    Map<String, String> statics = new LinkedHashMap<>();
    List<String> dynamic = new ArrayList<>();
    for (String col : partCols) {
      String match = null;
      for (String k : st.keySet()) {
        if (k.equalsIgnoreCase(col)) {
          match = k;
        }
      }
      if (match != null) {
        statics.put(col, st.get(match));
      } else {
        dynamic.add(col);
      }
    }
    return new WriteRef(target, ownPartitionColumns, statics, dynamic, overwrite,
        dynamicPartitionOverwrite, fileBased, Map.of());
  }
}
