package io.sparklock.shim.facts;

import io.sparklock.shim.util.ProductFields;
import io.sparklock.shim.util.ScalaInterop;
import io.sparklock.shim.wire.Facts.DatabaseField;
import io.sparklock.shim.wire.Facts.FieldRef;
import io.sparklock.shim.wire.Facts.PartitionSpecsField;
import io.sparklock.shim.wire.Facts.PathField;
import io.sparklock.shim.wire.Facts.TableField;
import io.sparklock.shim.wire.Facts.ValueField;
import io.sparklock.shim.wire.Facts;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTableType;
import org.apache.spark.sql.catalyst.catalog.HiveTableRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.View;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.V1Table;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;

/**
 * The root command's table-valued fields, generically by field name (BRIDGE.md "FieldRef"): each
 * product element goes through {@link FieldExtractors} (value type → extractor), which calls the
 * builders here. Python's command table says what each field name means for each command.
 */
final class CommandFields {
  final Refs refs;
  final List<FieldRef> fields = new ArrayList<>();

  CommandFields(Refs refs) {
    this.refs = refs;
  }

  /** Every product element of the root command, classified by its value's type. */
  List<FieldRef> collect(LogicalPlan root) {
    if (CallFacts.isCall(root)) {
      CallFacts.addArguments(this, root); // its arguments are expressions, not fields
      return fields;
    }
    int n = root.productArity();
    for (int i = 0; i < n; i++) {
      String name;
      Object value;
      try {
        name = ProductFields.name(root, i);
        value = root.productElement(i);
      } catch (RuntimeException e) {
        continue;
      }
      add(name, value, 0);
    }
    add(DeltaConstraints.of(refs.session, root)); // what a Delta command's condition pins
    add(RowLevelConstraints.of(root)); // what a v2 DELETE/UPDATE/MERGE's condition pins
    return fields;
  }

  /** One value of field {@code name}, {@code depth} levels inside collections (at most 2). */
  void add(String name, Object value, int depth) {
    FieldExtractors.extract(this, name, value, depth);
  }

  void add(FieldRef f) {
    if (f != null) {
      fields.add(f);
    }
  }

  // ---------------------------------------------------------------- builders

  ValueField value(String name, Object v) {
    return new ValueField(name, String.valueOf(v));
  }

  /** One partitionSpecs field per field name (a Seq of specs becomes one field). */
  void addSpec(String name, Map<String, String> spec) {
    for (FieldRef f : fields) {
      if (f instanceof PartitionSpecsField s && s.name().equals(name)) {
        s.specs().add(spec);
        return;
      }
    }
    List<Map<String, String>> specs = new ArrayList<>();
    specs.add(spec);
    fields.add(new PartitionSpecsField(name, specs));
  }

  /** A scala map of a partition spec as strings (Option values unwrapped, null when empty). */
  static Map<String, String> spec(scala.collection.Map<?, ?> m) {
    Map<String, String> out = new LinkedHashMap<>();
    ScalaInterop.map(m).forEach((k, v) -> {
      Object value = ScalaInterop.unwrapOption(v);
      out.put(String.valueOf(k), value == null ? null : value.toString());
    });
    return out;
  }

  PathField path(String name, String path) {
    return PathField.of(name, refs.pathRef(path));
  }

  TableField table(String name, CatalogTable t) {
    return table(name, t.identifier(), t);
  }

  /** A session-catalog table (or temp view) by identifier; the catalog says if it exists. */
  TableField table(String name, TableIdentifier id, CatalogTable given) {
    boolean temp;
    try {
      temp = refs.catalog != null && refs.catalog.isTempView(id);
    } catch (RuntimeException e) {
      temp = false;
    }
    if (temp) {
      return new TableField(
          name, null, ScalaInterop.orNull(id.database()), id.table(), true, List.of(), true, true);
    }
    String db = id.database().isDefined() ? id.database().get() : refs.currentDatabase();
    TableIdentifier qualified = new TableIdentifier(id.table(), scala.Option.apply(db));
    CatalogTable meta = null;
    boolean exists = false;
    try {
      if (refs.catalog != null && refs.catalog.tableExists(qualified)) {
        exists = true;
        meta = refs.catalog.getTableMetadata(qualified);
      }
    } catch (Exception e) {
      exists = false;
    }
    if (meta == null) {
      meta = given;
    }
    return new TableField(
        name,
        FactsExtractor.SESSION_CATALOG,
        db,
        id.table(),
        exists,
        meta == null ? List.of() : ScalaInterop.list(meta.partitionColumnNames()),
        meta != null && meta.tableType() == CatalogTableType.VIEW(),
        false);
  }

  /** A resolved v2 identifier: the session catalog's own tables by name, others as named. */
  TableField identifier(String name, CatalogPlugin cat, Identifier id) {
    if (FactsExtractor.SESSION_CATALOG.equals(cat.name()) && id.namespace().length <= 1) {
      scala.Option<String> db = id.namespace().length == 1
          ? scala.Option.apply(id.namespace()[0]) : scala.Option.empty();
      return table(name, new TableIdentifier(id.name(), db), null);
    }
    return v2(name, cat, id, null, List.of());
  }

  TableField v2(String name, CatalogPlugin cat, Identifier id, Boolean exists, List<String> cols) {
    return new TableField(
        name, cat.name(), Refs.namespace(id), id.name(), exists, cols, false, false);
  }

  /** An existing v2 table of a catalog, with its identity partition columns. */
  TableField v2Table(String name, CatalogPlugin cat, Identifier id, Table t) {
    return v2(name, cat, IcebergTables.base(t, id), true, Refs.identityColumns(t));
  }

  /** An unresolved multi-part name: session-catalog parts by identifier, others as named. */
  TableField nameParts(String name, List<String> parts) {
    if (parts.size() == 1) {
      return table(name, new TableIdentifier(parts.get(0)), null);
    }
    if (parts.size() == 2) {
      return table(name, new TableIdentifier(parts.get(1), scala.Option.apply(parts.get(0))), null);
    }
    if (parts.size() == 3 && FactsExtractor.SESSION_CATALOG.equalsIgnoreCase(parts.get(0))) {
      return table(name, new TableIdentifier(parts.get(2), scala.Option.apply(parts.get(1))), null);
    }
    return new TableField(
        name,
        parts.get(0),
        Refs.namespaceText(parts.subList(1, parts.size() - 1).toArray(new String[0])),
        parts.get(parts.size() - 1),
        null,
        List.of(),
        false,
        false);
  }

  DatabaseField database(String name, String cat, String db) {
    return new DatabaseField(name, cat, db);
  }

  /**
   * A connector table value that is no V1Table (Delta's DeltaTableV2 in ResolvedTable or
   * RestoreTableCommand.sourceTable): its catalogTable when it has one, else its path.
   */
  FieldRef connectorTable(String name, Table t) {
    Object ct = ScalaInterop.unwrapOption(Refs.invoke(t, "catalogTable"));
    if (ct instanceof CatalogTable c) {
      return table(name, c);
    }
    Object path = Refs.invoke(t, "path");
    if (path instanceof org.apache.hadoop.fs.Path) {
      return path(name, path.toString());
    }
    return null;
  }

  /** A plan-valued field naming a table: a relation, possibly under aliases (DELETE, MERGE). */
  FieldRef relation(String name, LogicalPlan p) {
    while (p != null && p.getClass().getSimpleName().equals("SubqueryAlias")) {
      p = p.children().isEmpty() ? null : p.children().head();
    }
    if (p instanceof LogicalRelation lr) {
      if (lr.catalogTable().isDefined()) {
        return table(name, lr.catalogTable().get());
      }
      if (lr.relation() instanceof HadoopFsRelation fs) {
        // a path-based table (Delta's delta.`/path`): its first root path
        List<org.apache.hadoop.fs.Path> roots = ScalaInterop.list(fs.location().rootPaths());
        return roots.isEmpty() ? null : path(name, roots.get(0).toString());
      }
      return null;
    }
    if (p instanceof HiveTableRelation h) {
      return table(name, h.tableMeta());
    }
    if (p instanceof View v && !v.isTempView()) {
      return table(name, v.desc());
    }
    if (p instanceof DataSourceV2Relation r) {
      if (r.table() instanceof V1Table v1) {
        return table(name, v1.v1Table());
      }
      if (r.catalog().isDefined() && r.identifier().isDefined()) {
        return v2Table(name, r.catalog().get(), r.identifier().get(), r.table());
      }
    }
    return null;
  }
}
