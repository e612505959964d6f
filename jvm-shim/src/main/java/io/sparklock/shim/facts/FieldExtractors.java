package io.sparklock.shim.facts;

import io.sparklock.shim.util.ScalaInterop;
import io.sparklock.shim.wire.Facts;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.analysis.ResolvedIdentifier;
import org.apache.spark.sql.catalyst.analysis.ResolvedNamespace;
import org.apache.spark.sql.catalyst.analysis.ResolvedPartitionSpec;
import org.apache.spark.sql.catalyst.analysis.ResolvedPersistentView;
import org.apache.spark.sql.catalyst.analysis.ResolvedTable;
import org.apache.spark.sql.catalyst.analysis.ResolvedTempView;
import org.apache.spark.sql.catalyst.analysis.UnresolvedPartitionSpec;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.V1Table;
import org.apache.spark.sql.execution.datasources.FileIndex;

/**
 * Command-field extraction as a table from value type to a small extractor, in the spirit of
 * Kyuubi's authz plugin: a new Spark (or Delta) type is one entry here. Types from optional jars
 * are keyed by class name ({@link #BY_CLASS_NAME}); the others are tried in order
 * ({@link #BY_TYPE}, more specific types first) and the first extractor that claims the value
 * wins -- one that declines (returns false) lets the next matching entry try.
 */
final class FieldExtractors {
  private FieldExtractors() {}

  /**
   * {@code format.`/path`} (Delta's {@code CONVERT TO DELTA parquet.`/p`}, {@code delta.`/p`}):
   * an identifier whose "database" names a file format and whose "table" is an absolute path no
   * catalog table has -- the files at that path, locked as the path (the table owning it, if
   * any), not as a table of a database called {@code parquet}.
   */
  static boolean isPathIdentifier(CommandFields out, TableIdentifier id) {
    if (id.database().isEmpty() || !new org.apache.hadoop.fs.Path(id.table()).isAbsolute()) {
      return false;
    }
    try {
      return out.refs.catalog == null || !out.refs.catalog.tableExists(id);
    } catch (RuntimeException e) {
      return true;
    }
  }

  /** Reports the fields one value of field {@code name} names; false = not mine, try on. */
  @FunctionalInterface
  interface Extractor<T> {
    boolean extract(CommandFields out, String name, T value, int depth);
  }

  private record Entry(Class<?> type, Extractor<Object> extractor) {}

  @SuppressWarnings("unchecked")
  private static <T> Entry on(Class<T> type, Extractor<? super T> e) {
    return new Entry(type, (Extractor<Object>) e);
  }

  private static final String ANALYSIS = "org.apache.spark.sql.catalyst.analysis.";
  private static final String STREAMING = "org.apache.spark.sql.execution.streaming.";

  /** Values of optional or unresolved classes, by exact class name. */
  private static final Map<String, Extractor<Object>> BY_CLASS_NAME = Map.ofEntries(
      Map.entry("org.apache.spark.sql.delta.DeltaLog", FieldExtractors::deltaLog),
      Map.entry(STREAMING + "sinks.FileStreamSink", FieldExtractors::fileStreamSink), // Spark 4.1+
      Map.entry(STREAMING + "FileStreamSink", FieldExtractors::fileStreamSink),
      Map.entry("org.apache.spark.sql.delta.sources.DeltaSink", FieldExtractors::fileStreamSink),
      Map.entry(ANALYSIS + "UnresolvedTable", FieldExtractors::unresolvedName),
      Map.entry(ANALYSIS + "UnresolvedTableOrView", FieldExtractors::unresolvedName),
      Map.entry(ANALYSIS + "UnresolvedView", FieldExtractors::unresolvedName),
      Map.entry(ANALYSIS + "UnresolvedIdentifier", FieldExtractors::unresolvedName),
      Map.entry(ANALYSIS + "UnresolvedRelation", FieldExtractors::unresolvedName),
      Map.entry("org.apache.spark.sql.catalyst.plans.logical.views.ResolvedV2View",
          FieldExtractors::resolvedV2View)); // an Iceberg view (DROP VIEW)

  /** Everything else, by type, in order. */
  private static final List<Entry> BY_TYPE = List.of(
      on(scala.Option.class, (out, name, o, depth) -> {
        if (o.isDefined()) {
          out.add(name, o.get(), depth);
        }
        return true;
      }),
      on(TableIdentifier.class, (out, name, id, depth) -> claim(out, isPathIdentifier(out, id)
          ? out.path(name, id.table()) : out.table(name, id, null))),
      on(CatalogTable.class, (out, name, t, depth) -> claim(out, out.table(name, t))),
      on(ResolvedTable.class, FieldExtractors::resolvedTable),
      on(ResolvedIdentifier.class, (out, name, ri, depth) ->
          claim(out, out.identifier(name, ri.catalog(), ri.identifier()))),
      on(ResolvedPersistentView.class, (out, name, rv, depth) ->
          claim(out, out.identifier(name, rv.catalog(), rv.identifier()).asView())),
      on(ResolvedTempView.class, (out, name, tv, depth) -> {
        Identifier id = tv.identifier();
        return claim(out, new Facts.TableField(
            name, null, Refs.namespace(id), id.name(), true, List.of(), true, true));
      }),
      on(V1Table.class, (out, name, t, depth) -> claim(out, out.table(name, t.v1Table()))),
      on(Table.class, (out, name, t, depth) -> claim(out, out.connectorTable(name, t))),
      on(org.apache.hadoop.fs.Path.class,
          (out, name, p, depth) -> claim(out, out.path(name, p.toString()))),
      on(FileIndex.class, (out, name, index, depth) -> {
        for (org.apache.hadoop.fs.Path p : ScalaInterop.list(index.rootPaths())) {
          out.add(out.path(name, p.toString()));
        }
        return true;
      }),
      on(ResolvedNamespace.class, (out, name, ns, depth) -> claim(out,
          out.database(name, ns.catalog().name(), join(ScalaInterop.anyList(ns.namespace()))))),
      on(UnresolvedPartitionSpec.class, (out, name, s, depth) -> {
        out.addSpec(name, CommandFields.spec(s.spec()));
        return true;
      }),
      on(ResolvedPartitionSpec.class, FieldExtractors::resolvedPartitionSpec),
      on(scala.collection.Map.class, (out, name, m, depth) -> {
        if (isPartitionName(name)) {
          out.addSpec(name, CommandFields.spec(m));
        } else if (isOptionsName(name)) {
          options(out, name, m);
        }
        return true;
      }),
      on(String.class, (out, name, s, depth) -> {
        if (isDatabaseName(name)) {
          out.add(out.database(name, null, s));
        } else if (depth == 0) {
          out.add(out.value(name, s));
        }
        return true;
      }),
      // Only fields naming a target table (DELETE/UPDATE/MERGE "table", "targetTable", Delta
      // "target"); a command's data query ("query", "child", "plan") is reported as reads,
      // never as a field the command table could lock EXCLUSIVE.
      on(LogicalPlan.class, (out, name, p, depth) ->
          isTargetName(name) && claim(out, out.relation(name, p))),
      // (partition spec, location) pairs of ALTER TABLE ADD PARTITION
      on(scala.Tuple2.class, (out, name, pair, depth) -> {
        if (depth == 0) {
          return false;
        }
        out.add(name, pair._1(), depth + 1);
        return true;
      }),
      on(scala.collection.Iterable.class, FieldExtractors::iterable),
      on(Object.class, (out, name, v, depth) -> {
        if (depth == 0 && isScalar(v)) {
          out.add(out.value(name, v));
        }
        return true;
      }));

  /** Classify one value of field {@code name} (nothing below depth 2). */
  static void extract(CommandFields out, String name, Object v, int depth) {
    if (v == null || depth > 2) {
      return;
    }
    Extractor<Object> byName = BY_CLASS_NAME.get(v.getClass().getName());
    if (byName != null) {
      byName.extract(out, name, v, depth);
      return;
    }
    for (Entry e : BY_TYPE) {
      if (e.type().isInstance(v) && e.extractor().extract(out, name, v, depth)) {
        return;
      }
    }
  }

  // ---------------------------------------------------------------- extractors

  /** Adds the field (if any) and claims the value. */
  private static boolean claim(CommandFields out, Facts.FieldRef f) {
    out.add(f);
    return true;
  }

  private static boolean resolvedTable(CommandFields out, String name, ResolvedTable rt, int d) {
    if (rt.table() instanceof V1Table v1) {
      return claim(out, out.table(name, v1.v1Table()));
    }
    Facts.FieldRef f = out.connectorTable(name, rt.table());
    return claim(out, f != null ? f : out.v2Table(name, rt.catalog(), rt.identifier(), rt.table()));
  }

  private static boolean resolvedPartitionSpec(
      CommandFields out, String name, ResolvedPartitionSpec rs, int depth) {
    Map<String, String> spec = new java.util.LinkedHashMap<>();
    InternalRow ident = rs.ident();
    int i = 0;
    for (String col : ScalaInterop.list(rs.names())) {
      Object raw = ident.isNullAt(i) ? null : ident.get(i, null);
      spec.put(col, raw == null ? null : raw.toString());
      i++;
    }
    out.addSpec(name, spec);
    return true;
  }

  private static boolean iterable(
      CommandFields out, String name, scala.collection.Iterable<?> seq, int depth) {
    List<Object> items = ScalaInterop.anyList(seq);
    boolean strings = !items.isEmpty() && items.stream().allMatch(x -> x instanceof String);
    if (strings && isDatabaseName(name)) {
      out.add(out.database(name, null, join(items)));
      return true;
    }
    if (strings && depth == 0 && isTableName(name)) {
      // a multi-part name (v2 RenameTable.newName): the table it names
      List<String> parts = new ArrayList<>();
      items.forEach(x -> parts.add((String) x));
      out.add(out.nameParts(name, parts));
      return true;
    }
    for (Object item : items) {
      out.add(name, item, depth + 1);
    }
    return true;
  }

  /**
   * A data source's options (CreateTempViewUsing, SaveIntoDataSourceCommand): the paths it reads
   * or writes -- its {@code path} option and each of its {@code paths} (a JSON array, as
   * {@code DataFrameReader.load(p1, p2)} passes them) -- and a JDBC table ({@code url} +
   * {@code dbtable}). Keys are case-insensitive, as Spark reads them.
   */
  private static void options(CommandFields out, String name, scala.collection.Map<?, ?> m) {
    Map<String, String> options = new java.util.HashMap<>();
    ScalaInterop.map(m).forEach((k, v) -> {
      if (v != null) {
        options.put(String.valueOf(k).toLowerCase(Locale.ROOT), v.toString());
      }
    });
    String path = options.get("path");
    if (path != null && !path.isEmpty()) {
      out.add(out.path(name, path));
    }
    for (String p : jsonPaths(options.get("paths"))) {
      out.add(out.path(name, p));
    }
    String url = options.get("url");
    String table = options.get("dbtable");
    if (url != null && table != null && url.regionMatches(true, 0, "jdbc:", 0, 5)) {
      out.add(new Facts.ConnectorField(name, JdbcTargets.target(url, table)));
    }
  }

  private static final com.fasterxml.jackson.databind.ObjectMapper JSON =
      new com.fasterxml.jackson.databind.ObjectMapper();

  /** The {@code paths} option: a JSON array of paths; text that is none is one path. */
  static List<String> jsonPaths(String paths) {
    if (paths == null || paths.isBlank()) {
      return List.of();
    }
    try {
      List<String> out = new ArrayList<>();
      for (Object p : JSON.readValue(paths, List.class)) {
        if (p != null && !p.toString().isEmpty()) {
          out.add(p.toString());
        }
      }
      return out;
    } catch (java.io.IOException | ClassCastException e) {
      return List.of(paths); // fail safe: lock it as written rather than not at all
    }
  }

  /**
   * A streaming file sink or Delta's sink (a micro-batch's write into a path or a table): its
   * base path, a private field {@code path} of either sink (no accessor), read reflectively.
   */
  private static boolean fileStreamSink(CommandFields out, String name, Object sink, int depth) {
    try {
      java.lang.reflect.Field f = sink.getClass().getDeclaredField("path");
      f.setAccessible(true);
      Object path = f.get(sink);
      if (path != null) {
        out.add(out.path(name, path.toString()));
      }
    } catch (ReflectiveOperationException | RuntimeException e) {
      throw new IllegalStateException("cannot read the path of " + sink.getClass() + ": " + e, e);
    }
    return true;
  }

  /** Delta's DeltaLog: its data path. */
  private static boolean deltaLog(CommandFields out, String name, Object log, int depth) {
    Object dataPath = Refs.invoke(log, "dataPath");
    if (dataPath != null) {
      out.add(out.path(name, dataPath.toString()));
    }
    return true;
  }

  /** Iceberg's resolved view (its catalog and identifier), by reflection: Iceberg is optional. */
  private static boolean resolvedV2View(CommandFields out, String name, Object v, int depth) {
    if (Refs.invoke(v, "catalog") instanceof CatalogPlugin cat
        && Refs.invoke(v, "identifier") instanceof Identifier id) {
      out.add(out.identifier(name, cat, id).asView());
    }
    return true;
  }

  /** An unresolved name node: its multipartIdentifier / nameParts, by reflection. */
  private static boolean unresolvedName(CommandFields out, String name, Object v, int depth) {
    for (String accessor : new String[] {"multipartIdentifier", "nameParts"}) {
      try {
        Object parts = v.getClass().getMethod(accessor).invoke(v);
        if (parts instanceof scala.collection.Iterable<?> it) {
          List<String> names = new ArrayList<>();
          ScalaInterop.anyList(it).forEach(x -> names.add(String.valueOf(x)));
          if (!names.isEmpty()) {
            out.add(out.nameParts(name, names));
          }
          return true;
        }
      } catch (ReflectiveOperationException e) {
        // try the next accessor
      }
    }
    return true;
  }

  // ---------------------------------------------------------------- field names

  private static String join(List<Object> parts) {
    List<String> out = new ArrayList<>();
    parts.forEach(p -> out.add(String.valueOf(p)));
    return Refs.namespaceText(out.toArray(new String[0]));
  }

  /** Booleans, numbers, enums and Scala case objects (e.g. a view type): reported as values. */
  private static boolean isScalar(Object v) {
    return v instanceof Boolean
        || v instanceof Number
        || v instanceof Enum
        || v.getClass().getName().endsWith("$");
  }

  private static boolean isTargetName(String name) {
    String n = name.toLowerCase(Locale.ROOT);
    return (n.contains("table") || n.contains("target")) && !n.contains("query");
  }

  /**
   * A field naming a table by its parts ({@code newName}, {@code tableName}, and the
   * {@code table} of Iceberg's DDL plans: the name as written).
   */
  private static boolean isTableName(String name) {
    String n = name.toLowerCase(Locale.ROOT);
    return (n.endsWith("name") || n.equals("table")) && !isDatabaseName(name);
  }

  /** A data source's options map (not a table's properties: those name no path it touches). */
  private static boolean isOptionsName(String name) {
    return name.equalsIgnoreCase("options");
  }

  private static boolean isPartitionName(String name) {
    String n = name.toLowerCase(Locale.ROOT);
    return n.contains("part") || n.contains("spec");
  }

  private static final Set<String> DATABASE_NAMES =
      Set.of("db", "dbname", "database", "databasename", "namespace", "ns");

  private static boolean isDatabaseName(String name) {
    return DATABASE_NAMES.contains(name.toLowerCase(Locale.ROOT));
  }
}
