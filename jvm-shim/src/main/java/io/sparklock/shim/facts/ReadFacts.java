package io.sparklock.shim.facts;

import io.sparklock.shim.telemetry.StatementHooks;
import io.sparklock.shim.util.ScalaInterop;
import io.sparklock.shim.wire.Facts.ObjectRef;
import io.sparklock.shim.wire.Facts.TableRef;
import io.sparklock.shim.wire.Facts;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTablePartition;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalog;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogWithListener;
import org.apache.spark.sql.catalyst.catalog.HiveTableRelation;
import org.apache.spark.sql.catalyst.catalog.InMemoryCatalog;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.View;
import org.apache.spark.sql.execution.datasources.CatalogFileIndex;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.PartitionPath;
import org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex;
import org.apache.spark.sql.execution.datasources.jdbc.JDBCRelation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StringType$;
import org.apache.spark.sql.types.StructField;

/**
 * Reads: every relation or view of the analysed plan (and the source of Delta's CLONE,
 * {@link CloneSources}), each table with the partitions the
 * optimized plan actually reads (after pruning; an unpruned read of a catalog-partitioned table
 * reads every partition the catalog lists).
 */
public final class ReadFacts {
  private final Refs refs;
  /** key → the read, first occurrence wins. */
  private final Map<String, ObjectRef> reads = new LinkedHashMap<>();
  /** key → the catalog's table of a read, as the plan holds it (not asked again). */
  private final Map<String, CatalogTable> tables = new LinkedHashMap<>();
  /** key → pruned partitions of that table across the optimized plan. */
  private final Map<String, PartitionsRead> partitions = new LinkedHashMap<>();

  ReadFacts(Refs refs) {
    this.refs = refs;
  }

  /** The reads: {@code optimized} tells the partitions read, {@code analyzed} the rest. */
  List<ObjectRef> collect(LogicalPlan analyzed, LogicalPlan optimized) {
    collectPartitions(optimized);
    FactsExtractor.walkPlan(analyzed, p -> {
      if (p instanceof View v) {
        add(refs.tableRef(v.desc(), v.isTempView()).asView());
      } else if (p instanceof LogicalRelation lr) {
        if (lr.catalogTable().isDefined()) {
          add(refs.tableRef(lr.catalogTable().get(), false), lr.catalogTable().get());
        } else if (lr.relation() instanceof HadoopFsRelation fs) {
          refs.pathRefs(fs.location()).forEach(this::add);
        } else if (lr.relation() instanceof JDBCRelation jdbc) {
          add(JdbcTargets.readOf(jdbc));
        }
      } else if (p instanceof HiveTableRelation h) {
        add(refs.tableRef(h.tableMeta(), false), h.tableMeta());
      } else if (p instanceof DataSourceV2Relation r) {
        refs.v2Refs(r).forEach(this::add);
      } else if (p instanceof DataSourceV2ScanRelation s) {
        refs.v2Refs(s.relation()).forEach(this::add);
      } else if (CloneSources.isClone(p)) {
        add(CloneSources.sourceOf(p, refs));
      }
    });
    List<ObjectRef> out = new ArrayList<>();
    for (Map.Entry<String, ObjectRef> e : reads.entrySet()) {
      ObjectRef ref = e.getValue();
      if (ref instanceof TableRef t && !t.isView()) {
        PartitionsRead pr = partitions.get(e.getKey());
        ref = t.withPartitions(
            pr == null || pr.all
                ? allPartitions(t, tables.get(e.getKey()))
                : new ArrayList<>(pr.specs));
      }
      out.add(ref);
    }
    return out;
  }

  private void add(ObjectRef ref) {
    reads.putIfAbsent(Refs.key(ref), ref);
  }

  private void add(ObjectRef ref, CatalogTable table) {
    String key = Refs.key(ref);
    if (reads.putIfAbsent(key, ref) == null) {
      tables.put(key, table);
    }
  }

  /**
   * Every partition of a partitioned session-catalog table read without pruning (a full scan
   * keeps the table's {@code CatalogFileIndex}): a full read reads each partition, and Hive
   * locks each one SHARED -- a partition writer takes only SHARED on the table, so a reader
   * holding just the table would overlap it. Null where the catalog does not know the
   * partitions (file-system partitioning) or cannot answer.
   *
   * <p>The scan itself lists the partitions from the catalog once more when it runs (after the
   * grant, so that listing cannot stand in for this one). One call, the cheap one for the
   * catalog: from a metastore only their names ({@code listPartitionNames}: a Hive metastore
   * answers names without each partition's storage descriptor, 125 -> 18 ms for 1,000
   * partitions on Derby), parsed as Spark writes them ({@code col=value/...}, escaped, in the
   * table's column order); from the in-memory catalog the partitions as they are.
   */
  private List<Map<String, String>> allPartitions(TableRef ref, CatalogTable known) {
    if (refs.catalog == null
        || ref.partitionColumns().isEmpty()
        || !FactsExtractor.SESSION_CATALOG.equals(ref.catalog())
        || ref.isTemp()) {
      return null;
    }
    try {
      long start = StatementHooks.now();
      TableIdentifier id = new TableIdentifier(ref.table(), scala.Option.apply(ref.database()));
      CatalogTable t = known != null ? known : refs.catalog.getTableMetadata(id);
      if (!t.tracksPartitionsInCatalog() && !"hive".equalsIgnoreCase(Refs.providerOf(t))) {
        return null;
      }
      List<Map<String, String>> out = inMemory() ? null : byName(id, t);
      if (out == null) {
        out = new ArrayList<>();
        for (CatalogTablePartition part :
            ScalaInterop.list(refs.catalog.listPartitions(id, scala.Option.empty()))) {
          out.add(Refs.orderedSpec(part.spec(), t.partitionColumnNames()));
        }
      }
      StatementHooks.catalogAsked(start);
      return out;
    } catch (Exception e) { // the catalog's NoSuch* exceptions are checked in Java's eyes
      return null;
    }
  }

  /**
   * Whether the session catalog keeps its partitions in this JVM's memory (Spark's in-memory
   * catalog): {@code listPartitions} hands them over as they are there, while their names
   * would be made, sorted and parsed for nothing.
   */
  private boolean inMemory() {
    ExternalCatalog external = refs.catalog.externalCatalog();
    if (external instanceof ExternalCatalogWithListener listened) {
      external = listened.unwrapped();
    }
    return external instanceof InMemoryCatalog;
  }

  /** The partitions by name, or null when a name is not as Spark writes them. */
  private List<Map<String, String>> byName(TableIdentifier id, CatalogTable t) {
    List<String> columns = ScalaInterop.list(t.partitionColumnNames());
    List<String> escaped = new ArrayList<>(columns.size());
    for (String column : columns) {
      escaped.add(ExternalCatalogUtils.escapePathName(column));
    }
    List<Map<String, String>> out = new ArrayList<>();
    try {
      for (String name :
          ScalaInterop.list(refs.catalog.listPartitionNames(id, scala.Option.empty()))) {
        out.add(specOfName(name, columns, escaped));
      }
    } catch (IllegalArgumentException unexpected) {
      return null;
    }
    return out;
  }

  /**
   * A partition's spec from its name as the catalog writes it ({@code p=1/q=a%2Fb}): the
   * values unescaped, the table's column names (the catalog's own spelling) in its order --
   * the spec {@code listPartitions} holds for that partition. {@code escaped}: the column
   * names as the name spells them.
   */
  static Map<String, String> specOfName(
      String name, List<String> columns, List<String> escaped) {
    Map<String, String> spec = new LinkedHashMap<>();
    int at = 0;
    for (int i = 0; i < columns.size(); i++) {
      int end = at > name.length() ? -1 : name.indexOf('/', at);
      String part = at > name.length() ? "" : name.substring(at, end < 0 ? name.length() : end);
      int eq = part.indexOf('=');
      if (eq < 0 || !part.regionMatches(true, 0, escaped.get(i), 0, eq)
          || escaped.get(i).length() != eq) {
        throw new IllegalArgumentException("not a partition name of " + columns + ": " + name);
      }
      spec.put(columns.get(i), ExternalCatalogUtils.unescapePathName(part.substring(eq + 1)));
      at = end < 0 ? name.length() + 1 : end + 1;
    }
    if (at <= name.length()) {
      throw new IllegalArgumentException("not a partition name of " + columns + ": " + name);
    }
    return spec;
  }

  /** Which partitions each table relation of the optimized plan actually reads. */
  private void collectPartitions(LogicalPlan optimized) {
    FactsExtractor.walkPlan(optimized, p -> {
      if (p instanceof LogicalRelation lr) {
        if (!lr.catalogTable().isDefined()) {
          return;
        }
        CatalogTable t = lr.catalogTable().get();
        List<Map<String, String>> specs = null;
        if (t.partitionColumnNames().nonEmpty()
            && t.tracksPartitionsInCatalog()
            && lr.relation() instanceof HadoopFsRelation fs) {
          FileIndex index = fs.location();
          // PruneFileSourcePartitions swaps the CatalogFileIndex of the table for an
          // in-memory index listing only the selected partitions.
          if (!(index instanceof CatalogFileIndex)
              && index instanceof PartitioningAwareFileIndex pa) {
            specs = specsOf(pa);
          }
        }
        partitionsOf(t).add(specs);
      } else if (p instanceof HiveTableRelation h) {
        List<Map<String, String>> specs = null;
        if (h.prunedPartitions().isDefined()) {
          specs = new ArrayList<>();
          for (CatalogTablePartition part : ScalaInterop.list(h.prunedPartitions().get())) {
            specs.add(Refs.orderedSpec(part.spec(), h.tableMeta().partitionColumnNames()));
          }
        }
        partitionsOf(h.tableMeta()).add(specs);
      }
    });
  }

  private PartitionsRead partitionsOf(CatalogTable t) {
    return partitions.computeIfAbsent(
        Refs.key(refs.tableRef(t, false)), k -> new PartitionsRead());
  }

  private List<Map<String, String>> specsOf(PartitioningAwareFileIndex index) {
    List<Map<String, String>> out = new ArrayList<>();
    StructField[] fs = index.partitionSpec().partitionColumns().fields();
    for (PartitionPath part : ScalaInterop.list(index.partitionSpec().partitions())) {
      out.add(specOf(part, fs, refs.timeZone()));
    }
    return out;
  }

  /** A partition's spec as the catalog spells it (also how FileListings finds its epoch). */
  public static Map<String, String> specOf(PartitionPath part, StructField[] fs, String timeZone) {
    InternalRow values = part.values();
    Map<String, String> spec = new LinkedHashMap<>();
    for (int i = 0; i < fs.length; i++) {
      spec.put(fs[i].name(), valueString(values, i, fs[i].dataType(), timeZone));
    }
    return spec;
  }

  /** A partition value as the catalog spells it; null for the default (null) partition. */
  private static String valueString(InternalRow row, int i, DataType type, String timeZone) {
    if (row.isNullAt(i)) {
      return null;
    }
    if (type instanceof org.apache.spark.sql.types.StringType) {
      return row.getUTF8String(i).toString();
    }
    Object v = row.get(i, type);
    Object s =
        new Cast(new Literal(v, type), StringType$.MODULE$, scala.Option.apply(timeZone))
            .eval(null);
    return s == null ? null : s.toString();
  }

  /** The partitions one table is read with across the plan: union, or all. */
  private static final class PartitionsRead {
    boolean all;
    final Set<Map<String, String>> specs = new LinkedHashSet<>();

    void add(List<Map<String, String>> more) {
      if (more == null) {
        all = true;
      } else {
        specs.addAll(more);
      }
    }
  }
}
