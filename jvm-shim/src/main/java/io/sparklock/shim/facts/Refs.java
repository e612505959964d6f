package io.sparklock.shim.facts;

import io.sparklock.shim.util.ScalaInterop;
import io.sparklock.shim.wire.Facts.ConnectorRef;
import io.sparklock.shim.wire.Facts.ObjectRef;
import io.sparklock.shim.wire.Facts.PathRef;
import io.sparklock.shim.wire.Facts.TableRef;
import io.sparklock.shim.wire.Facts;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTableType;
import org.apache.spark.sql.catalyst.catalog.SessionCatalog;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.V1Table;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;

/**
 * One statement's extraction context (session, catalog, path owners) and the refs built from
 * Spark's relation types: a {@code CatalogTable}, a v2 relation, a path. Shared by the reads,
 * writes and command-field extractors.
 */
public final class Refs {
  final SparkSession session;
  final SessionCatalog catalog;
  final PathOwners owners;

  Refs(SparkSession session) {
    this.session = session;
    this.catalog = session == null ? null : session.sessionState().catalog();
    this.owners = new PathOwners(session, catalog);
  }

  String currentDatabase() {
    return catalog == null ? null : catalog.getCurrentDatabase();
  }

  String timeZone() {
    return session == null ? "UTC" : session.sessionState().conf().sessionLocalTimeZone();
  }

  TableRef tableRef(CatalogTable t, boolean temp) {
    TableIdentifier id = t.identifier();
    String catalogName;
    String database;
    if (temp) {
      catalogName = null;
      database = ScalaInterop.orNull(id.database());
    } else {
      catalogName = id.catalog().isDefined() ? id.catalog().get() : FactsExtractor.SESSION_CATALOG;
      database = id.database().isDefined() ? id.database().get() : currentDatabase();
    }
    return new TableRef(
        catalogName,
        database,
        id.table(),
        ScalaInterop.list(t.partitionColumnNames()),
        null,
        !temp && t.tableType() == CatalogTableType.VIEW(),
        temp,
        temp ? null : providerOf(t),
        temp || t.storage().locationUri().isEmpty()
            ? null : t.storage().locationUri().get().toString());
  }

  /**
   * What a v2 relation reads: one ref, except a v2 file table read by path with several paths
   * ({@code spark.read.load(p1, p2)}, the {@code paths} option): each path.
   */
  List<ObjectRef> v2Refs(DataSourceV2Relation r) {
    if (!(r.table() instanceof V1Table) && r.catalog().isEmpty()) {
      List<ObjectRef> out = new ArrayList<>();
      for (Object p : filePaths(r.table())) {
        out.add(pathRef(String.valueOf(p)));
      }
      if (!out.isEmpty()) {
        return out;
      }
    }
    return List.of(v2Ref(r));
  }

  /** The paths of a v2 file table (none for any other table). */
  private static List<Object> filePaths(Table t) {
    Object paths = isFileTable(t) ? invoke(t, "paths") : null;
    return paths instanceof scala.collection.Iterable<?> it ? ScalaInterop.anyList(it) : List.of();
  }

  ObjectRef v2Ref(DataSourceV2Relation r) {
    if (r.table() instanceof V1Table) {
      return tableRef(((V1Table) r.table()).v1Table(), false);
    }
    if (r.catalog().isEmpty()) {
      // no catalog names it: a file table read/written by path (v2 file sources) is its
      // (first) path; anything else (noop, console, memory) is no lockable object
      List<Object> paths = filePaths(r.table());
      if (!paths.isEmpty()) {
        return pathRef(String.valueOf(paths.get(0)));
      }
      return new ConnectorRef(r.table().name(), null);
    }
    // a catalog's table without its identifier is no name to lock by: no table, so Python
    // locks the whole catalog (fail closed)
    String database = null;
    String table = null;
    if (r.identifier().isDefined()) {
      Identifier id = IcebergTables.base(r.table(), r.identifier().get());
      database = namespace(id);
      table = id.name();
    }
    Object provider = r.table().properties().get("provider");
    Object location = r.table().properties().get("location");
    return new TableRef(
        r.catalog().get().name(),
        database,
        table,
        identityColumns(r.table()),
        null,
        false,
        false,
        provider == null ? null : provider.toString(),
        location == null ? null : location.toString());
  }

  List<ObjectRef> pathRefs(FileIndex index) {
    List<ObjectRef> out = new ArrayList<>();
    for (org.apache.hadoop.fs.Path p : ScalaInterop.list(index.rootPaths())) {
      out.add(pathRef(p.toString()));
    }
    return out;
  }

  PathRef pathRef(String path) {
    String qualified = owners.qualify(path);
    return new PathRef(qualified, owners.ownerOf(qualified, currentDatabase()));
  }

  /** The identity of a read: one ref per table (temp views apart), path or connector table. */
  static String key(ObjectRef ref) {
    if (ref instanceof PathRef p) {
      return "path:" + p.path();
    }
    if (ref instanceof ConnectorRef c) {
      return "connector:" + c.name() + ":" + c.target();
    }
    TableRef t = (TableRef) ref;
    return ("table:" + t.catalog() + "." + t.database() + "." + t.table()
            + (t.isTemp() ? ":temp" : ""))
        .toLowerCase(Locale.ROOT);
  }

  static boolean isFileTable(Table t) {
    if (t instanceof V1Table) {
      String provider = providerOf(((V1Table) t).v1Table());
      return provider != null && !provider.equalsIgnoreCase("jdbc");
    }
    for (Class<?> c = t.getClass(); c != null; c = c.getSuperclass()) {
      if (c.getName().equals("org.apache.spark.sql.execution.datasources.v2.FileTable")) {
        return true;
      }
    }
    return false;
  }

  public static String providerOf(CatalogTable t) {
    return ScalaInterop.orNull(t.provider());
  }

  static String namespace(Identifier id) {
    return id.namespace().length == 0 ? null : namespaceText(id.namespace());
  }

  /**
   * A namespace's parts joined by {@code .}, a part holding {@code .} or a backtick quoted in
   * backticks as Spark quotes identifiers (so Python splits it back exactly); a plain
   * one-part namespace (a session database) stays as it is.
   */
  public static String namespaceText(String... parts) {
    List<String> out = new ArrayList<>();
    for (String p : parts) {
      out.add(p.contains(".") || p.contains("`") ? "`" + p.replace("`", "``") + "`" : p);
    }
    return String.join(".", out);
  }

  public static List<String> identityColumns(Table t) {
    List<String> cols = new ArrayList<>();
    Transform[] parts = t.partitioning();
    if (parts == null) {
      return cols;
    }
    for (Transform tr : parts) {
      if ("identity".equals(tr.name())) {
        for (NamedReference ref : tr.references()) {
          cols.add(String.join(".", ref.fieldNames()));
        }
      }
    }
    return cols;
  }

  /** A catalog partition spec in the table's column order (columns it lacks after). */
  public static Map<String, String> orderedSpec(
      scala.collection.Map<String, String> spec, scala.collection.Seq<String> order) {
    Map<String, String> out = new LinkedHashMap<>();
    Map<String, String> raw = ScalaInterop.map(spec);
    for (String col : ScalaInterop.list(order)) {
      if (raw.containsKey(col)) {
        out.put(col, raw.get(col));
      }
    }
    for (Map.Entry<String, String> e : raw.entrySet()) {
      out.putIfAbsent(e.getKey(), e.getValue());
    }
    return out;
  }

  /** A no-argument method's result by reflection, or null (optional jars: Delta, Hive). */
  static Object invoke(Object target, String method) {
    try {
      return target.getClass().getMethod(method).invoke(target);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }
}
