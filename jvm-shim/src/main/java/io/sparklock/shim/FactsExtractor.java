package io.sparklock.shim;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.analysis.NamedRelation;
import org.apache.spark.sql.catalyst.analysis.ResolvedIdentifier;
import org.apache.spark.sql.catalyst.analysis.ResolvedNamespace;
import org.apache.spark.sql.catalyst.analysis.ResolvedPartitionSpec;
import org.apache.spark.sql.catalyst.analysis.ResolvedPersistentView;
import org.apache.spark.sql.catalyst.analysis.ResolvedTable;
import org.apache.spark.sql.catalyst.analysis.ResolvedTempView;
import org.apache.spark.sql.catalyst.analysis.UnresolvedPartitionSpec;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTablePartition;
import org.apache.spark.sql.catalyst.catalog.CatalogTableType;
import org.apache.spark.sql.catalyst.catalog.HiveTableRelation;
import org.apache.spark.sql.catalyst.catalog.SessionCatalog;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.plans.QueryPlan;
import org.apache.spark.sql.catalyst.plans.logical.AppendData;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.CommandResult;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OverwriteByExpression;
import org.apache.spark.sql.catalyst.plans.logical.OverwritePartitionsDynamic;
import org.apache.spark.sql.catalyst.plans.logical.View;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.V1Table;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.execution.datasources.CatalogFileIndex;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.InsertIntoDataSourceCommand;
import org.apache.spark.sql.execution.datasources.InsertIntoHadoopFsRelationCommand;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.PartitionPath;
import org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StringType$;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The facts of one statement (jvm-shim/BRIDGE.md "Facts JSON"): what it reads (after partition
 * pruning), what it writes, and the table-valued fields of its root command.
 *
 * <p>Facts only, no policy: which lock mode goes on which object is Python's decision.
 */
public final class FactsExtractor {
  public static final String SESSION_CATALOG = "spark_catalog";

  private FactsExtractor() {}

  /** The facts JSON (BRIDGE.md) of a statement; EXPLAIN LOCKS passes null execution ids. */
  public static String factsJson(
      SparkSession session,
      LogicalPlan analyzed,
      LogicalPlan optimized,
      String executionId,
      String rootExecutionId,
      String sqlText) {
    return factsJson(
        session, analyzed, optimized, executionId, rootExecutionId, sqlText,
        Collections.emptyList());
  }

  static String factsJson(
      SparkSession session,
      LogicalPlan analyzed,
      LogicalPlan optimized,
      String executionId,
      String rootExecutionId,
      String sqlText,
      List<String> enclosingHandles) {
    return Json.write(
        checkedFacts(session, analyzed, optimized, executionId, rootExecutionId, sqlText,
            enclosingHandles));
  }

  /** {@link #facts}, failing closed with LOCK_FACTS_FAILED when the plan cannot be read. */
  static Map<String, Object> checkedFacts(
      SparkSession session,
      LogicalPlan analyzed,
      LogicalPlan optimized,
      String executionId,
      String rootExecutionId,
      String sqlText,
      List<String> enclosingHandles) {
    try {
      return facts(session, analyzed, optimized, executionId, rootExecutionId, sqlText,
          enclosingHandles);
    } catch (SparkLockException e) {
      throw e;
    } catch (RuntimeException e) {
      // Fail closed: a statement whose objects are unknown must not run unlocked.
      throw new SparkLockException(
          "LOCK_FACTS_FAILED: sparklock could not work out which tables the statement uses ("
              + (analyzed == null ? "no plan" : analyzed.nodeName()) + "): " + e,
          e);
    }
  }

  /** The facts as an ordered map (see {@link #factsJson}). */
  public static Map<String, Object> facts(
      SparkSession session,
      LogicalPlan analyzed,
      LogicalPlan optimized,
      String executionId,
      String rootExecutionId,
      String sqlText,
      List<String> enclosingHandles) {
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("session", sessionId(session));
    f.put("executionId", executionId);
    f.put("rootExecutionId", rootExecutionId);
    f.put("sql", sqlText);
    f.put("conf", SparkLockBridge.sessionConf(session));
    f.put("currentDatabase",
        session == null ? null : session.sessionState().catalog().getCurrentDatabase());
    f.put("command", analyzed == null ? null : simpleName(analyzed));
    f.put("commandClass", analyzed == null ? null : analyzed.getClass().getName());
    Extraction x = new Extraction(session);
    if (analyzed != null) {
      x.collectPartitions(optimized != null ? optimized : analyzed);
      x.collectReads(analyzed);
      x.collectWrites(analyzed);
      // The root command's own fields, for the command table. A write command reported in
      // "writes" (insert into a table or path) is fully described there: its fields would
      // only repeat the target, coarser (the table instead of the partition).
      if (analyzed instanceof Command && x.writeOf(analyzed) == null) {
        x.collectFields(analyzed);
      }
    }
    f.put("reads", new ArrayList<>(x.reads.values()));
    f.put("writes", x.writes);
    f.put("fields", x.fields);
    f.put("enclosingHandles", enclosingHandles == null ? List.of() : enclosingHandles);
    return f;
  }

  /** {@code SparkSession.sessionUUID} (classic sessions), or null. */
  public static String sessionId(SparkSession session) {
    String uuid = session == null ? null : ClassicSession.sessionUUID(session);
    if (uuid != null) {
      return uuid;
    }
    return session == null ? null : "session-" + System.identityHashCode(session);
  }

  /** Whether the facts name nothing at all (no reads, writes or fields): nothing to lock. */
  static boolean namesNothing(Map<String, Object> facts) {
    for (String k : new String[] {"reads", "writes", "fields"}) {
      Object v = facts.get(k);
      if (v instanceof List && !((List<?>) v).isEmpty()) {
        return false;
      }
    }
    return true;
  }

  /** The SQL text the plan was parsed from (Spark 4 origin), or null. */
  public static String sqlText(LogicalPlan plan) {
    if (plan == null) {
      return null;
    }
    try {
      scala.Option<String> t = plan.origin().sqlText();
      return t.isDefined() ? t.get() : null;
    } catch (RuntimeException e) {
      return null;
    }
  }

  static String simpleName(Object o) {
    String n = o.getClass().getSimpleName();
    if (n.isEmpty()) {
      n = o.getClass().getName();
      n = n.substring(n.lastIndexOf('.') + 1);
    }
    return n.endsWith("$") ? n.substring(0, n.length() - 1) : n;
  }

  // ====================================================================== extraction

  /** Every plan node once: children, inner children (command queries) and subqueries. */
  static void walkPlan(LogicalPlan root, java.util.function.Consumer<LogicalPlan> visit) {
    Set<Object> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    List<LogicalPlan> stack = new ArrayList<>();
    stack.add(root);
    while (!stack.isEmpty()) {
      LogicalPlan p = stack.remove(stack.size() - 1);
      if (p == null || !seen.add(p)) {
        continue;
      }
      visit.accept(p);
      if (p instanceof CommandResult) {
        continue; // an eager command's cached rows: the command already ran (and locked)
      }
      for (scala.collection.Iterator<?> it = p.children().iterator(); it.hasNext(); ) {
        stack.add((LogicalPlan) it.next());
      }
      for (scala.collection.Iterator<QueryPlan<?>> it = p.innerChildren().iterator();
          it.hasNext(); ) {
        QueryPlan<?> q = it.next();
        if (q instanceof LogicalPlan) {
          stack.add((LogicalPlan) q);
        }
      }
      for (scala.collection.Iterator<?> it = p.subqueries().iterator(); it.hasNext(); ) {
        stack.add((LogicalPlan) it.next());
      }
      if (p instanceof Command) {
        // a command's plan-valued fields that are neither children nor inner children
        // (SaveAsV1TableCommand.query, Delta's MERGE source/target): read too
        for (scala.collection.Iterator<Object> it = p.productIterator(); it.hasNext(); ) {
          Object o = it.next();
          if (o instanceof scala.Option && ((scala.Option<?>) o).isDefined()) {
            o = ((scala.Option<?>) o).get();
          }
          if (o instanceof LogicalPlan) {
            stack.add((LogicalPlan) o);
          }
        }
      }
    }
  }

  private static final class Extraction {
    final SparkSession session;
    final SessionCatalog catalog;
    final Map<String, Map<String, Object>> reads = new LinkedHashMap<>();
    final List<Map<String, Object>> writes = new ArrayList<>();
    final List<Map<String, Object>> fields = new ArrayList<>();
    /** key → pruned partitions (null value = all partitions / unknown). */
    final Map<String, PartitionsRead> partitions = new LinkedHashMap<>();

    Extraction(SparkSession session) {
      this.session = session;
      this.catalog = session == null ? null : session.sessionState().catalog();
    }

    String currentDatabase() {
      return catalog == null ? null : catalog.getCurrentDatabase();
    }

    String timeZone() {
      return session == null ? "UTC" : session.sessionState().conf().sessionLocalTimeZone();
    }

    // ---------------------------------------------------------------- traversal

    void walk(LogicalPlan root, java.util.function.Consumer<LogicalPlan> visit) {
      walkPlan(root, visit);
    }

    // ---------------------------------------------------------------- reads

    void collectReads(LogicalPlan analyzed) {
      walk(analyzed, p -> {
        if (p instanceof View) {
          View v = (View) p;
          Map<String, Object> ref = tableRef(v.desc(), v.isTempView());
          ref.put("isView", true);
          addRead(ref);
        } else if (p instanceof LogicalRelation) {
          LogicalRelation lr = (LogicalRelation) p;
          if (lr.catalogTable().isDefined()) {
            addRead(tableRef(lr.catalogTable().get(), false));
          } else if (lr.relation() instanceof HadoopFsRelation) {
            for (Map<String, Object> ref : pathRefs(((HadoopFsRelation) lr.relation()).location())) {
              addRead(ref);
            }
          }
        } else if (p instanceof HiveTableRelation) {
          addRead(tableRef(((HiveTableRelation) p).tableMeta(), false));
        } else if (p instanceof DataSourceV2Relation) {
          addRead(v2Ref((DataSourceV2Relation) p));
        } else if (p instanceof DataSourceV2ScanRelation) {
          addRead(v2Ref(((DataSourceV2ScanRelation) p).relation()));
        }
      });
      for (Map.Entry<String, Map<String, Object>> e : reads.entrySet()) {
        Map<String, Object> ref = e.getValue();
        if (!"table".equals(ref.get("kind")) || Boolean.TRUE.equals(ref.get("isView"))) {
          continue;
        }
        PartitionsRead pr = partitions.get(e.getKey());
        ref.put("partitions",
            pr == null || pr.all ? allPartitions(ref) : new ArrayList<>(pr.specs.values()));
      }
    }

    /**
     * Every partition of a partitioned session-catalog table read without pruning (a full scan
     * keeps the table's {@code CatalogFileIndex}): a full read reads each partition, and Hive
     * locks each one SHARED -- a partition writer takes only SHARED on the table, so a reader
     * holding just the table would overlap it. Null where the catalog does not know the
     * partitions (file-system partitioning) or cannot answer.
     */
    List<Map<String, Object>> allPartitions(Map<String, Object> ref) {
      List<String> columns = listOf(ref.get("partitionColumns"));
      if (catalog == null
          || columns == null
          || columns.isEmpty()
          || !SESSION_CATALOG.equals(ref.get("catalog"))
          || Boolean.TRUE.equals(ref.get("isTemp"))) {
        return null;
      }
      try {
        TableIdentifier id = new TableIdentifier(
            (String) ref.get("table"), scala.Option.apply((String) ref.get("database")));
        CatalogTable t = catalog.getTableMetadata(id);
        if (!t.tracksPartitionsInCatalog() && !"hive".equalsIgnoreCase(providerOf(t))) {
          return null;
        }
        List<Map<String, Object>> out = new ArrayList<>();
        scala.collection.Iterator<CatalogTablePartition> it =
            catalog.listPartitions(id, scala.Option.empty()).iterator();
        while (it.hasNext()) {
          out.add(orderedSpec(it.next().spec(), t.partitionColumnNames()));
        }
        return out;
      } catch (Exception e) { // the catalog's NoSuch* exceptions are checked in Java's eyes
        return null;
      }
    }

    void addRead(Map<String, Object> ref) {
      String key = key(ref);
      reads.putIfAbsent(key, ref);
    }

    /** Which partitions each table relation of the optimized plan actually reads. */
    void collectPartitions(LogicalPlan optimized) {
      walk(optimized, p -> {
        if (p instanceof LogicalRelation) {
          LogicalRelation lr = (LogicalRelation) p;
          if (!lr.catalogTable().isDefined()) {
            return;
          }
          CatalogTable t = lr.catalogTable().get();
          String key = key(tableRef(t, false));
          List<Map<String, Object>> specs = null;
          if (t.partitionColumnNames().nonEmpty()
              && t.tracksPartitionsInCatalog()
              && lr.relation() instanceof HadoopFsRelation) {
            FileIndex index = ((HadoopFsRelation) lr.relation()).location();
            // PruneFileSourcePartitions swaps the CatalogFileIndex of the table for an
            // in-memory index listing only the selected partitions.
            if (!(index instanceof CatalogFileIndex)
                && index instanceof PartitioningAwareFileIndex) {
              specs = specsOf(((PartitioningAwareFileIndex) index));
            }
          }
          partitions.computeIfAbsent(key, k -> new PartitionsRead()).add(specs);
        } else if (p instanceof HiveTableRelation) {
          HiveTableRelation h = (HiveTableRelation) p;
          String key = key(tableRef(h.tableMeta(), false));
          List<Map<String, Object>> specs = null;
          if (h.prunedPartitions().isDefined()) {
            specs = new ArrayList<>();
            scala.collection.Iterator<CatalogTablePartition> it =
                h.prunedPartitions().get().iterator();
            while (it.hasNext()) {
              specs.add(orderedSpec(it.next().spec(), h.tableMeta().partitionColumnNames()));
            }
          }
          partitions.computeIfAbsent(key, k -> new PartitionsRead()).add(specs);
        }
      });
    }

    List<Map<String, Object>> specsOf(PartitioningAwareFileIndex index) {
      List<Map<String, Object>> out = new ArrayList<>();
      StructType schema = index.partitionSpec().partitionColumns();
      scala.collection.Iterator<PartitionPath> it = index.partitionSpec().partitions().iterator();
      while (it.hasNext()) {
        InternalRow values = it.next().values();
        Map<String, Object> spec = new LinkedHashMap<>();
        StructField[] fs = schema.fields();
        for (int i = 0; i < fs.length; i++) {
          spec.put(fs[i].name(), valueString(values, i, fs[i].dataType()));
        }
        out.add(spec);
      }
      return out;
    }

    /** A partition value as the catalog spells it; null for the default (null) partition. */
    String valueString(InternalRow row, int i, DataType type) {
      if (row.isNullAt(i)) {
        return null;
      }
      if (type instanceof org.apache.spark.sql.types.StringType) {
        return row.getUTF8String(i).toString();
      }
      Object v = row.get(i, type);
      Object s =
          new Cast(new Literal(v, type), StringType$.MODULE$, scala.Option.apply(timeZone()))
              .eval(null);
      return s == null ? null : s.toString();
    }

    // ---------------------------------------------------------------- writes

    void collectWrites(LogicalPlan analyzed) {
      walk(analyzed, p -> {
        Map<String, Object> w = writeOf(p);
        if (w != null) {
          writes.add(w);
        }
      });
    }

    Map<String, Object> writeOf(LogicalPlan p) {
      if (p instanceof InsertIntoHadoopFsRelationCommand) {
        InsertIntoHadoopFsRelationCommand c = (InsertIntoHadoopFsRelationCommand) p;
        Map<String, Object> ref =
            c.catalogTable().isDefined()
                ? tableRef(c.catalogTable().get(), false)
                : pathRef(c.outputPath().toString());
        List<String> partCols = new ArrayList<>();
        for (scala.collection.Iterator<Attribute> it = c.partitionColumns().iterator();
            it.hasNext(); ) {
          partCols.add(it.next().name());
        }
        if (!c.catalogTable().isDefined()) {
          ref.put("partitionColumns", partCols);
        }
        Map<String, String> statics = toJavaMap(c.staticPartitions());
        fillPartitioning(ref, partCols, statics);
        ref.put("overwrite", c.mode() == SaveMode.Overwrite);
        ref.put("dynamicPartitionOverwrite", c.dynamicPartitionOverwrite());
        ref.put("fileBased", true);
        return ref;
      }
      if (p.getClass().getName().equals("org.apache.spark.sql.hive.execution.InsertIntoHiveTable")) {
        return hiveWrite(p);
      }
      if (p instanceof InsertIntoDataSourceCommand) {
        InsertIntoDataSourceCommand c = (InsertIntoDataSourceCommand) p;
        LogicalRelation lr = c.logicalRelation();
        if (!lr.catalogTable().isDefined()) {
          return null;
        }
        Map<String, Object> ref = tableRef(lr.catalogTable().get(), false);
        fillPartitioning(ref, listOf(ref.get("partitionColumns")), Map.of());
        ref.put("overwrite", c.overwrite());
        ref.put("dynamicPartitionOverwrite", false);
        ref.put("fileBased", false);
        return ref;
      }
      String cls = p.getClass().getSimpleName();
      if (cls.equals("InsertIntoDataSourceDirCommand") || cls.equals("InsertIntoHiveDirCommand")) {
        // INSERT OVERWRITE [LOCAL] DIRECTORY: a write to a path (its owner table, if any)
        Object storage = invoke(p, "storage");
        Object uri = storage == null ? null : invoke(storage, "locationUri");
        if (!(uri instanceof scala.Option) || !((scala.Option<?>) uri).isDefined()) {
          return null;
        }
        Map<String, Object> ref = pathRef(((scala.Option<?>) uri).get().toString());
        ref.put("partitionColumns", List.of());
        fillPartitioning(ref, List.of(), Map.of());
        ref.put("overwrite", Boolean.TRUE.equals(invoke(p, "overwrite")));
        ref.put("dynamicPartitionOverwrite", false);
        ref.put("fileBased", true);
        return ref;
      }
      if (p instanceof AppendData) {
        return v2Write(((AppendData) p).table(), false, false);
      }
      if (p instanceof OverwriteByExpression) {
        return v2Write(((OverwriteByExpression) p).table(), true, false);
      }
      if (p instanceof OverwritePartitionsDynamic) {
        return v2Write(((OverwritePartitionsDynamic) p).table(), true, true);
      }
      return null;
    }

    /** InsertIntoHiveTable, read reflectively (spark-hive is optional on the classpath). */
    @SuppressWarnings("unchecked")
    Map<String, Object> hiveWrite(LogicalPlan p) {
      try {
        CatalogTable table = (CatalogTable) p.getClass().getMethod("table").invoke(p);
        scala.collection.Map<String, scala.Option<String>> partition =
            (scala.collection.Map<String, scala.Option<String>>)
                p.getClass().getMethod("partition").invoke(p);
        boolean overwrite = (Boolean) p.getClass().getMethod("overwrite").invoke(p);
        Map<String, Object> ref = tableRef(table, false);
        Map<String, String> statics = new LinkedHashMap<>();
        for (scala.collection.Iterator<scala.Tuple2<String, scala.Option<String>>> it =
                partition.iterator();
            it.hasNext(); ) {
          scala.Tuple2<String, scala.Option<String>> kv = it.next();
          if (kv._2().isDefined()) {
            statics.put(kv._1(), kv._2().get());
          }
        }
        fillPartitioning(ref, listOf(ref.get("partitionColumns")), statics);
        ref.put("overwrite", overwrite);
        ref.put("dynamicPartitionOverwrite", false);
        ref.put("fileBased", true);
        return ref;
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException("cannot read InsertIntoHiveTable: " + e, e);
      }
    }

    Map<String, Object> v2Write(NamedRelation target, boolean overwrite, boolean dynamic) {
      if (!(target instanceof DataSourceV2Relation)) {
        return null;
      }
      DataSourceV2Relation r = (DataSourceV2Relation) target;
      Map<String, Object> ref = v2Ref(r);
      List<String> partCols = listOf(ref.get("partitionColumns"));
      Map<String, Object> noStatic = new LinkedHashMap<>();
      ref.put("staticPartition", noStatic);
      ref.put("dynamicColumns", partCols);
      ref.put("overwrite", overwrite);
      ref.put("dynamicPartitionOverwrite", dynamic);
      ref.put("fileBased", isFileTable(r.table()));
      return ref;
    }

    boolean isFileTable(Table t) {
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

    /** staticPartition (column order) and dynamicColumns of a write. */
    void fillPartitioning(Map<String, Object> ref, List<String> partCols, Map<String, String> st) {
      Map<String, Object> statics = new LinkedHashMap<>();
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
      ref.put("staticPartition", statics);
      ref.put("dynamicColumns", dynamic);
    }

    // ---------------------------------------------------------------- fields

    /** The root command's table-valued product elements, generically by field name. */
    void collectFields(LogicalPlan root) {
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
        classify(name, value, 0);
      }
    }

    void classify(String name, Object v, int depth) {
      if (v == null || depth > 2) {
        return;
      }
      if (v instanceof scala.Option) {
        scala.Option<?> o = (scala.Option<?>) v;
        if (o.isDefined()) {
          classify(name, o.get(), depth);
        }
        return;
      }
      if (v instanceof TableIdentifier) {
        fields.add(tableField(name, (TableIdentifier) v, null));
      } else if (v instanceof CatalogTable) {
        CatalogTable t = (CatalogTable) v;
        fields.add(tableField(name, t.identifier(), t));
      } else if (v instanceof ResolvedTable) {
        ResolvedTable rt = (ResolvedTable) v;
        if (rt.table() instanceof V1Table) {
          CatalogTable t = ((V1Table) rt.table()).v1Table();
          fields.add(tableField(name, t.identifier(), t));
        } else {
          Map<String, Object> f = connectorTableField(name, rt.table());
          if (f == null) {
            f = v2Field(name, rt.catalog(), rt.identifier());
            f.put("exists", true);
            f.put("partitionColumns", identityColumns(rt.table()));
          }
          fields.add(f);
        }
      } else if (v instanceof ResolvedIdentifier) {
        ResolvedIdentifier ri = (ResolvedIdentifier) v;
        fields.add(identifierField(name, ri.catalog(), ri.identifier()));
      } else if (v instanceof ResolvedPersistentView) {
        ResolvedPersistentView rv = (ResolvedPersistentView) v;
        Map<String, Object> f = identifierField(name, rv.catalog(), rv.identifier());
        f.put("isView", true);
        fields.add(f);
      } else if (v instanceof ResolvedTempView) {
        Identifier id = ((ResolvedTempView) v).identifier();
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("name", name);
        f.put("kind", "table");
        f.put("database", id.namespace().length == 0 ? null : String.join(".", id.namespace()));
        f.put("table", id.name());
        f.put("exists", true);
        f.put("partitionColumns", List.of());
        f.put("isView", true);
        f.put("isTemp", true);
        fields.add(f);
      } else if (v instanceof V1Table) {
        CatalogTable t = ((V1Table) v).v1Table();
        fields.add(tableField(name, t.identifier(), t));
      } else if (v instanceof Table) {
        Map<String, Object> f = connectorTableField(name, (Table) v);
        if (f != null) {
          fields.add(f);
        }
      } else if (v instanceof org.apache.hadoop.fs.Path) {
        fields.add(pathField(name, v.toString()));
      } else if (v instanceof FileIndex) {
        for (scala.collection.Iterator<org.apache.hadoop.fs.Path> it =
                ((FileIndex) v).rootPaths().iterator();
            it.hasNext(); ) {
          fields.add(pathField(name, it.next().toString()));
        }
      } else if (v.getClass().getName().equals("org.apache.spark.sql.delta.DeltaLog")) {
        Object dataPath = invoke(v, "dataPath");
        if (dataPath != null) {
          fields.add(pathField(name, dataPath.toString()));
        }
      } else if (v instanceof ResolvedNamespace) {
        ResolvedNamespace ns = (ResolvedNamespace) v;
        fields.add(databaseField(name, ns.catalog().name(), join(ns.namespace())));
      } else if (isUnresolvedName(v)) {
        List<String> parts = multipart(v);
        if (parts != null && !parts.isEmpty()) {
          fields.add(namePartsField(name, parts));
        }
      } else if (v instanceof UnresolvedPartitionSpec) {
        specsField(name).add(stringMap(((UnresolvedPartitionSpec) v).spec()));
      } else if (v instanceof ResolvedPartitionSpec) {
        ResolvedPartitionSpec rs = (ResolvedPartitionSpec) v;
        Map<String, Object> spec = new LinkedHashMap<>();
        InternalRow ident = rs.ident();
        int i = 0;
        for (scala.collection.Iterator<String> it = rs.names().iterator(); it.hasNext(); i++) {
          Object raw = ident.isNullAt(i) ? null : ident.get(i, null);
          spec.put(it.next(), raw == null ? null : raw.toString());
        }
        specsField(name).add(spec);
      } else if (v instanceof scala.collection.Map) {
        if (isPartitionName(name)) {
          specsField(name).add(stringMap((scala.collection.Map<?, ?>) v));
        }
      } else if (v instanceof String) {
        if (isDatabaseName(name)) {
          fields.add(databaseField(name, null, (String) v));
        } else if (depth == 0) {
          fields.add(valueField(name, v));
        }
      } else if (v instanceof LogicalPlan && isTargetName(name)) {
        // Only fields naming a target table (DELETE/UPDATE/MERGE "table", "targetTable",
        // Delta "target"); a command's data query ("query", "child", "plan") is reported as
        // reads, never as a field the command table could lock EXCLUSIVE.
        Map<String, Object> f = relationField(name, (LogicalPlan) v);
        if (f != null) {
          fields.add(f);
        }
      } else if (v instanceof scala.Tuple2 && depth > 0) {
        // (partition spec, location) pairs of ALTER TABLE ADD PARTITION
        classify(name, ((scala.Tuple2<?, ?>) v)._1(), depth + 1);
      } else if (v instanceof scala.collection.Iterable) {
        scala.collection.Iterable<?> seq = (scala.collection.Iterable<?>) v;
        if (isDatabaseName(name) && allStrings(seq)) {
          fields.add(databaseField(name, null, join(seq)));
          return;
        }
        for (scala.collection.Iterator<?> it = seq.iterator(); it.hasNext(); ) {
          classify(name, it.next(), depth + 1);
        }
      } else if (depth == 0 && isScalar(v)) {
        fields.add(valueField(name, v));
      }
    }

    /** A plan-valued field naming a table: a relation, possibly under aliases (DELETE, MERGE). */
    Map<String, Object> relationField(String name, LogicalPlan p) {
      while (p != null && p.getClass().getSimpleName().equals("SubqueryAlias")) {
        p = p.children().isEmpty() ? null : p.children().head();
      }
      if (p == null) {
        return null;
      }
      if (p instanceof LogicalRelation && ((LogicalRelation) p).catalogTable().isDefined()) {
        CatalogTable t = ((LogicalRelation) p).catalogTable().get();
        return tableField(name, t.identifier(), t);
      }
      if (p instanceof LogicalRelation
          && ((LogicalRelation) p).relation() instanceof HadoopFsRelation) {
        // a path-based table (Delta's delta.`/path`): its first root path
        scala.collection.Seq<org.apache.hadoop.fs.Path> roots =
            ((HadoopFsRelation) ((LogicalRelation) p).relation()).location().rootPaths();
        return roots.isEmpty() ? null : pathField(name, roots.head().toString());
      }
      if (p instanceof HiveTableRelation) {
        CatalogTable t = ((HiveTableRelation) p).tableMeta();
        return tableField(name, t.identifier(), t);
      }
      if (p instanceof View && !((View) p).isTempView()) {
        CatalogTable t = ((View) p).desc();
        return tableField(name, t.identifier(), t);
      }
      if (p instanceof DataSourceV2Relation) {
        DataSourceV2Relation r = (DataSourceV2Relation) p;
        if (r.table() instanceof V1Table) {
          CatalogTable t = ((V1Table) r.table()).v1Table();
          return tableField(name, t.identifier(), t);
        }
        if (r.catalog().isDefined() && r.identifier().isDefined()) {
          Map<String, Object> f = v2Field(name, r.catalog().get(), r.identifier().get());
          f.put("exists", true);
          f.put("partitionColumns", identityColumns(r.table()));
          return f;
        }
      }
      return null;
    }

    Map<String, Object> valueField(String name, Object v) {
      Map<String, Object> f = new LinkedHashMap<>();
      f.put("name", name);
      f.put("kind", "value");
      f.put("value", String.valueOf(v));
      return f;
    }

    /** One partitionSpecs field per field name (a Seq of specs becomes one field). */
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> specsField(String name) {
      for (Map<String, Object> f : fields) {
        if ("partitionSpecs".equals(f.get("kind")) && name.equals(f.get("name"))) {
          return (List<Map<String, Object>>) f.get("specs");
        }
      }
      Map<String, Object> f = new LinkedHashMap<>();
      f.put("name", name);
      f.put("kind", "partitionSpecs");
      List<Map<String, Object>> specs = new ArrayList<>();
      f.put("specs", specs);
      fields.add(f);
      return specs;
    }

    Map<String, Object> tableField(String name, TableIdentifier id, CatalogTable given) {
      Map<String, Object> f = new LinkedHashMap<>();
      f.put("name", name);
      f.put("kind", "table");
      boolean temp = false;
      try {
        temp = catalog != null && catalog.isTempView(id);
      } catch (RuntimeException e) {
        temp = false;
      }
      if (temp) {
        f.put("catalog", null);
        f.put("database", id.database().isDefined() ? id.database().get() : null);
        f.put("table", id.table());
        f.put("exists", true);
        f.put("partitionColumns", List.of());
        f.put("isView", true);
        f.put("isTemp", true);
        return f;
      }
      String db = id.database().isDefined() ? id.database().get() : currentDatabase();
      TableIdentifier qualified = new TableIdentifier(id.table(), scala.Option.apply(db));
      CatalogTable meta = null;
      boolean exists = false;
      try {
        if (catalog != null && catalog.tableExists(qualified)) {
          exists = true;
          meta = catalog.getTableMetadata(qualified);
        }
      } catch (Exception e) {
        exists = false;
      }
      if (meta == null) {
        meta = given;
      }
      f.put("catalog", SESSION_CATALOG);
      f.put("database", db);
      f.put("table", id.table());
      f.put("exists", exists);
      f.put("partitionColumns", meta == null ? List.of() : seq(meta.partitionColumnNames()));
      f.put("isView", meta != null && meta.tableType() == CatalogTableType.VIEW());
      f.put("isTemp", false);
      return f;
    }

    Map<String, Object> identifierField(String name, CatalogPlugin cat, Identifier id) {
      if (SESSION_CATALOG.equals(cat.name()) && id.namespace().length <= 1) {
        scala.Option<String> db =
            id.namespace().length == 1 ? scala.Option.apply(id.namespace()[0]) : scala.Option.empty();
        return tableField(name, new TableIdentifier(id.name(), db), null);
      }
      Map<String, Object> f = v2Field(name, cat, id);
      f.put("exists", null);
      f.put("partitionColumns", List.of());
      return f;
    }

    Map<String, Object> v2Field(String name, CatalogPlugin cat, Identifier id) {
      Map<String, Object> f = new LinkedHashMap<>();
      f.put("name", name);
      f.put("kind", "table");
      f.put("catalog", cat.name());
      f.put("database", id.namespace().length == 0 ? null : String.join(".", id.namespace()));
      f.put("table", id.name());
      return f;
    }

    Map<String, Object> namePartsField(String name, List<String> parts) {
      if (parts.size() == 1) {
        return tableField(name, new TableIdentifier(parts.get(0)), null);
      }
      if (parts.size() == 2) {
        return tableField(
            name, new TableIdentifier(parts.get(1), scala.Option.apply(parts.get(0))), null);
      }
      if (parts.size() == 3 && SESSION_CATALOG.equalsIgnoreCase(parts.get(0))) {
        return tableField(
            name, new TableIdentifier(parts.get(2), scala.Option.apply(parts.get(1))), null);
      }
      Map<String, Object> f = new LinkedHashMap<>();
      f.put("name", name);
      f.put("kind", "table");
      f.put("catalog", parts.get(0));
      f.put("database", String.join(".", parts.subList(1, parts.size() - 1)));
      f.put("table", parts.get(parts.size() - 1));
      f.put("exists", null);
      f.put("partitionColumns", List.of());
      return f;
    }

    Map<String, Object> databaseField(String name, String cat, String db) {
      Map<String, Object> f = new LinkedHashMap<>();
      f.put("name", name);
      f.put("kind", "database");
      f.put("catalog", cat);
      f.put("database", db);
      return f;
    }

    // ---------------------------------------------------------------- refs

    Map<String, Object> tableRef(CatalogTable t, boolean temp) {
      Map<String, Object> ref = new LinkedHashMap<>();
      TableIdentifier id = t.identifier();
      ref.put("kind", "table");
      if (temp) {
        ref.put("catalog", null);
        ref.put("database", id.database().isDefined() ? id.database().get() : null);
      } else {
        ref.put("catalog", id.catalog().isDefined() ? id.catalog().get() : SESSION_CATALOG);
        ref.put("database", id.database().isDefined() ? id.database().get() : currentDatabase());
      }
      ref.put("table", id.table());
      ref.put("partitionColumns", seq(t.partitionColumnNames()));
      ref.put("partitions", null);
      ref.put("isView", !temp && t.tableType() == CatalogTableType.VIEW());
      ref.put("isTemp", temp);
      ref.put("provider", temp ? null : providerOf(t));
      ref.put("location", temp || t.storage().locationUri().isEmpty()
          ? null : t.storage().locationUri().get().toString());
      return ref;
    }

    Map<String, Object> v2Ref(DataSourceV2Relation r) {
      if (r.table() instanceof V1Table) {
        return tableRef(((V1Table) r.table()).v1Table(), false);
      }
      if (r.catalog().isEmpty()) {
        // no catalog names it: a file table read/written by path (v2 file sources) is its
        // path; anything else (noop, console, memory) is no lockable object
        Object paths = isFileTable(r.table()) ? invoke(r.table(), "paths") : null;
        if (paths instanceof scala.collection.Iterable
            && ((scala.collection.Iterable<?>) paths).nonEmpty()) {
          return pathRef(String.valueOf(((scala.collection.Iterable<?>) paths).head()));
        }
        Map<String, Object> ref = new LinkedHashMap<>();
        ref.put("kind", "connector");
        ref.put("name", r.table().name());
        return ref;
      }
      Map<String, Object> ref = new LinkedHashMap<>();
      ref.put("kind", "table");
      ref.put("catalog", r.catalog().isDefined() ? r.catalog().get().name() : null);
      if (r.identifier().isDefined()) {
        Identifier id = r.identifier().get();
        ref.put("database",
            id.namespace().length == 0 ? null : String.join(".", id.namespace()));
        ref.put("table", id.name());
      } else {
        ref.put("database", null);
        ref.put("table", r.table().name());
      }
      ref.put("partitionColumns", identityColumns(r.table()));
      ref.put("partitions", null);
      ref.put("isView", false);
      ref.put("isTemp", false);
      Object provider = r.table().properties().get("provider");
      ref.put("provider", provider == null ? null : provider.toString());
      Object location = r.table().properties().get("location");
      ref.put("location", location == null ? null : location.toString());
      return ref;
    }

    List<Map<String, Object>> pathRefs(FileIndex index) {
      List<Map<String, Object>> out = new ArrayList<>();
      for (scala.collection.Iterator<org.apache.hadoop.fs.Path> it = index.rootPaths().iterator();
          it.hasNext(); ) {
        out.add(pathRef(it.next().toString()));
      }
      return out;
    }

    Map<String, Object> pathRef(String path) {
      Map<String, Object> ref = new LinkedHashMap<>();
      path = qualify(path);
      ref.put("kind", "path");
      ref.put("path", path);
      ref.put("ownerTable", ownerOf(path));
      return ref;
    }

    /** A path with its file system's scheme and authority (a bare /x as file:/x), normalised. */
    String qualify(String path) {
      try {
        org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(path);
        if (p.toUri().getScheme() == null && session != null) {
          p = p.getFileSystem(session.sessionState().newHadoopConf()).makeQualified(p);
        }
        return normalizePath(p.toString());
      } catch (Exception e) {
        return normalizePath(path);
      }
    }

    /** Session-catalog tables with a location, loaded once per statement (only for paths). */
    List<CatalogTable> located;

    /**
     * The catalog table whose location is the path or contains it, or null: {"catalog",
     * "database", "table", "partitionColumns", "partition"} where "partition" is the leading
     * partition spec named by the path's {@code col=value} directories below the table root
     * ({} for the table itself). The deepest location wins.
     */
    Map<String, Object> ownerOf(String path) {
      if (catalog == null || path == null) {
        return null;
      }
      String norm = normalizePath(path);
      if (located == null) {
        located = new ArrayList<>();
        for (scala.collection.Iterator<String> dbs = catalog.listDatabases().iterator();
            dbs.hasNext(); ) {
          String db = dbs.next();
          try {
            scala.collection.Seq<TableIdentifier> ids = catalog.listTables(db);
            List<TableIdentifier> persistent = new ArrayList<>();
            for (scala.collection.Iterator<TableIdentifier> it = ids.iterator(); it.hasNext(); ) {
              TableIdentifier id = it.next();
              if (id.database().isDefined()) {
                persistent.add(id);
              }
            }
            scala.collection.Iterator<CatalogTable> ts =
                catalog
                    .getTablesByName(
                        ScalaInterop.seq(persistent))
                    .iterator();
            while (ts.hasNext()) {
              CatalogTable t = ts.next();
              if (t.storage().locationUri().isDefined()
                  && t.tableType() != CatalogTableType.VIEW()) {
                located.add(t);
              }
            }
          } catch (Exception e) {
            // a database that cannot be listed owns nothing we can name: the path lock stays
          }
        }
      }
      CatalogTable best = null;
      String bestLoc = null;
      for (CatalogTable t : located) {
        String loc = normalizePath(t.storage().locationUri().get().toString());
        if ((norm.equals(loc) || norm.startsWith(loc.endsWith("/") ? loc : loc + "/"))
            && (bestLoc == null || loc.length() > bestLoc.length())) {
          best = t;
          bestLoc = loc;
        }
      }
      if (best == null) {
        return null;
      }
      Map<String, Object> owner = new LinkedHashMap<>();
      owner.put("catalog", SESSION_CATALOG);
      owner.put("database", best.identifier().database().isDefined()
          ? best.identifier().database().get() : currentDatabase());
      owner.put("table", best.identifier().table());
      List<String> cols = seq(best.partitionColumnNames());
      owner.put("partitionColumns", cols);
      Map<String, Object> spec = new LinkedHashMap<>();
      String rest = norm.length() > bestLoc.length() ? norm.substring(bestLoc.length()) : "";
      int i = 0;
      for (String seg : rest.split("/")) {
        if (seg.isEmpty()) {
          continue;
        }
        int eq = seg.indexOf('=');
        if (i >= cols.size() || eq < 0) {
          break;
        }
        String k = org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils.unescapePathName(
            seg.substring(0, eq));
        if (!k.equalsIgnoreCase(cols.get(i))) {
          break;
        }
        String v = org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils.unescapePathName(
            seg.substring(eq + 1));
        spec.put(cols.get(i), org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils
            .DEFAULT_PARTITION_NAME().equals(v) ? null : v);
        i++;
      }
      owner.put("partition", spec);
      return owner;
    }

    /** A path-valued field (a DeltaLog's data path, a file index root), owner resolved. */
    Map<String, Object> pathField(String name, String path) {
      Map<String, Object> f = pathRef(path);
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("name", name);
      out.putAll(f);
      return out;
    }

    /**
     * A connector table value that is no V1Table (Delta's DeltaTableV2 in ResolvedTable or
     * RestoreTableCommand.sourceTable): its catalogTable when it has one, else its path.
     */
    Map<String, Object> connectorTableField(String name, Table t) {
      Object ct = invoke(t, "catalogTable");
      if (ct instanceof scala.Option && ((scala.Option<?>) ct).isDefined()
          && ((scala.Option<?>) ct).get() instanceof CatalogTable) {
        CatalogTable c = (CatalogTable) ((scala.Option<?>) ct).get();
        return tableField(name, c.identifier(), c);
      }
      Object path = invoke(t, "path");
      if (path instanceof org.apache.hadoop.fs.Path) {
        return pathField(name, path.toString());
      }
      return null;
    }

    String key(Map<String, Object> ref) {
      if ("path".equals(ref.get("kind"))) {
        return "path:" + ref.get("path");
      }
      if ("connector".equals(ref.get("kind"))) {
        return "connector:" + ref.get("name");
      }
      return ("table:" + ref.get("catalog") + "." + ref.get("database") + "." + ref.get("table")
              + (Boolean.TRUE.equals(ref.get("isTemp")) ? ":temp" : ""))
          .toLowerCase(Locale.ROOT);
    }
  }

  /** The partitions one table is read with across the plan: union, or all. */
  private static final class PartitionsRead {
    boolean all;
    final Map<String, Map<String, Object>> specs = new LinkedHashMap<>();

    void add(List<Map<String, Object>> more) {
      if (more == null) {
        all = true;
        return;
      }
      for (Map<String, Object> s : more) {
        specs.putIfAbsent(Json.write(s), s);
      }
    }
  }

  // ====================================================================== helpers

  /** A no-argument method's result by reflection, or null. */
  static Object invoke(Object target, String method) {
    try {
      return target.getClass().getMethod(method).invoke(target);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  /** A path as Hadoop prints it, without a trailing slash (file:///x and file:/x/ -> file:/x). */
  static String normalizePath(String path) {
    String s;
    try {
      s = new org.apache.hadoop.fs.Path(path).toString();
    } catch (RuntimeException e) {
      s = path;
    }
    while (s.length() > 1 && s.endsWith("/") && !s.endsWith(":/") && !s.endsWith("//")) {
      s = s.substring(0, s.length() - 1);
    }
    return s;
  }

  static String providerOf(CatalogTable t) {
    return t.provider().isDefined() ? t.provider().get() : null;
  }

  static List<String> identityColumns(Table t) {
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

  static Map<String, Object> orderedSpec(
      scala.collection.Map<String, String> spec, scala.collection.Seq<String> order) {
    Map<String, Object> out = new LinkedHashMap<>();
    Map<String, String> raw = toJavaMap(spec);
    for (scala.collection.Iterator<String> it = order.iterator(); it.hasNext(); ) {
      String col = it.next();
      if (raw.containsKey(col)) {
        out.put(col, raw.get(col));
      }
    }
    for (Map.Entry<String, String> e : raw.entrySet()) {
      out.putIfAbsent(e.getKey(), e.getValue());
    }
    return out;
  }

  static Map<String, String> toJavaMap(scala.collection.Map<String, String> m) {
    Map<String, String> out = new LinkedHashMap<>();
    for (scala.collection.Iterator<scala.Tuple2<String, String>> it = m.iterator();
        it.hasNext(); ) {
      scala.Tuple2<String, String> kv = it.next();
      out.put(kv._1(), kv._2());
    }
    return out;
  }

  static Map<String, Object> stringMap(scala.collection.Map<?, ?> m) {
    Map<String, Object> out = new LinkedHashMap<>();
    for (scala.collection.Iterator<?> it = m.iterator(); it.hasNext(); ) {
      scala.Tuple2<?, ?> kv = (scala.Tuple2<?, ?>) it.next();
      Object v = kv._2();
      if (v instanceof scala.Option) {
        v = ((scala.Option<?>) v).isDefined() ? ((scala.Option<?>) v).get() : null;
      }
      out.put(String.valueOf(kv._1()), v == null ? null : v.toString());
    }
    return out;
  }

  static List<String> seq(scala.collection.Iterable<String> s) {
    List<String> out = new ArrayList<>();
    for (scala.collection.Iterator<String> it = s.iterator(); it.hasNext(); ) {
      out.add(it.next());
    }
    return out;
  }

  @SuppressWarnings("unchecked")
  static List<String> listOf(Object o) {
    return o instanceof List ? (List<String>) o : new ArrayList<>();
  }

  static String join(scala.collection.Iterable<?> parts) {
    List<String> out = new ArrayList<>();
    for (scala.collection.Iterator<?> it = parts.iterator(); it.hasNext(); ) {
      out.add(String.valueOf(it.next()));
    }
    return String.join(".", out);
  }

  static boolean allStrings(scala.collection.Iterable<?> s) {
    for (scala.collection.Iterator<?> it = s.iterator(); it.hasNext(); ) {
      if (!(it.next() instanceof String)) {
        return false;
      }
    }
    return true;
  }

  /** Booleans, numbers, enums and Scala case objects (e.g. a view type): reported as values. */
  static boolean isScalar(Object v) {
    return v instanceof Boolean
        || v instanceof Number
        || v instanceof Enum
        || v.getClass().getName().endsWith("$");
  }

  static boolean isTargetName(String name) {
    String n = name.toLowerCase(Locale.ROOT);
    return (n.contains("table") || n.contains("target")) && !n.contains("query");
  }

  static boolean isPartitionName(String name) {
    String n = name.toLowerCase(Locale.ROOT);
    return n.contains("part") || n.contains("spec");
  }

  static boolean isDatabaseName(String name) {
    switch (name.toLowerCase(Locale.ROOT)) {
      case "db":
      case "dbname":
      case "database":
      case "databasename":
      case "namespace":
      case "ns":
        return true;
      default:
        return false;
    }
  }

  private static final Set<String> UNRESOLVED_NAMES =
      Set.of(
          "UnresolvedTable",
          "UnresolvedTableOrView",
          "UnresolvedView",
          "UnresolvedIdentifier",
          "UnresolvedRelation");

  static boolean isUnresolvedName(Object v) {
    return v instanceof LogicalPlan
        && v.getClass().getName().startsWith("org.apache.spark.sql.catalyst.analysis.")
        && UNRESOLVED_NAMES.contains(v.getClass().getSimpleName());
  }

  /** multipartIdentifier / nameParts of an unresolved name node, by reflection. */
  static List<String> multipart(Object v) {
    for (String m : new String[] {"multipartIdentifier", "nameParts"}) {
      try {
        Object parts = v.getClass().getMethod(m).invoke(v);
        if (parts instanceof scala.collection.Iterable) {
          List<String> out = new ArrayList<>();
          for (scala.collection.Iterator<?> it = ((scala.collection.Iterable<?>) parts).iterator();
              it.hasNext(); ) {
            out.add(String.valueOf(it.next()));
          }
          return out;
        }
      } catch (ReflectiveOperationException e) {
        // try the next accessor
      }
    }
    return null;
  }
}
