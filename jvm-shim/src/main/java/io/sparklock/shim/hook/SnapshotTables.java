package io.sparklock.shim.hook;

import io.sparklock.shim.facts.FactsExtractor;
import io.sparklock.shim.util.ScalaInterop;
import java.lang.reflect.Field;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.SupportsRowLevelOperations;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.write.RowLevelOperation;
import org.apache.spark.sql.connector.write.RowLevelOperationInfoImpl;
import org.apache.spark.sql.connector.write.RowLevelOperationTable;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.runtime.AbstractPartialFunction;

/**
 * The v2 tables whose locks are taken before their scans are built ({@link EarlyLockRule}), and
 * the re-load of Iceberg's tables once those locks are granted.
 *
 * <p>Early: every table of a catalog other than the session catalog, and Iceberg's tables in
 * any catalog. A v2 connector fixes what a statement reads when it loads the table or builds
 * the scan, both before the planned statement runs; before the scans are built is the last
 * point at which the plan can still be made to read what the lock protects. The session
 * catalog's own file tables keep their lock at pre-execution, where the optimized plan tells
 * the partitions read and their files are listed again after the grant.
 *
 * <p>Re-loaded: a table Iceberg loaded while the statement was analysed, before it waited,
 * holds the snapshot current then (Iceberg for Spark 4.1 pins it in the loaded table and in the
 * row-level operation built from it; for 3.5 and 4.0 the table's metadata is read once, at
 * load, and a caching catalog hands the same table out again). After the grant each such
 * table is loaded again from its catalog (its cache entry dropped first) and a
 * DELETE/UPDATE/MERGE's operation is built again from the fresh table, so the scan and the
 * commit's conflict check start from the snapshot the lock protects. A table read at a fixed
 * snapshot (time travel) or on another branch, or whose schema changed meanwhile, stays as it
 * was analysed.
 */
final class SnapshotTables {
  private static final Logger LOG = LoggerFactory.getLogger(SnapshotTables.class);
  static final String ICEBERG_TABLE = "org.apache.iceberg.spark.source.SparkTable";

  private SnapshotTables() {}

  /** Whether {@code plan} reads or writes a table that is locked before its scans exist. */
  static boolean any(LogicalPlan plan) {
    boolean[] found = {false};
    FactsExtractor.walkPlan(plan, p -> {
      if (p instanceof DataSourceV2Relation r) {
        found[0] |= lockedEarly(r);
      } else if (p instanceof DataSourceV2ScanRelation s) {
        found[0] |= lockedEarly(s.relation());
      }
      for (Object o : ScalaInterop.list(p.productIterator())) {
        if (o instanceof DataSourceV2Relation r) { // a write's target (not a child)
          found[0] |= lockedEarly(r);
        }
      }
    });
    return found[0];
  }

  private static boolean lockedEarly(DataSourceV2Relation r) {
    CatalogPlugin catalog = ScalaInterop.orNull(r.catalog());
    if (catalog == null) {
      return false; // a table no catalog names (a path, noop, console)
    }
    return !FactsExtractor.SESSION_CATALOG.equals(catalog.name()) || isIceberg(baseOf(r.table()));
  }

  /** {@code plan} with its Iceberg tables loaded again (see the class comment). */
  static LogicalPlan reload(LogicalPlan plan) {
    Reloader reloader = new Reloader();
    return plan.transformUpWithSubqueries(reloader);
  }

  private static Table baseOf(Table t) {
    return t instanceof RowLevelOperationTable rlo ? rlo.table() : t;
  }

  private static boolean isIceberg(Table t) {
    return t != null && t.getClass().getName().equals(ICEBERG_TABLE);
  }

  /** Each relation of the plan (children and write targets) with its table re-loaded once. */
  private static final class Reloader extends AbstractPartialFunction<LogicalPlan, LogicalPlan> {
    /** old table → its replacement (itself when kept); the same object for every use of it. */
    private final Map<Table, Table> done = new IdentityHashMap<>();
    private final Map<Table, Boolean> fresh = new IdentityHashMap<>();

    @Override
    public boolean isDefinedAt(LogicalPlan p) {
      return true;
    }

    @Override
    public LogicalPlan apply(LogicalPlan p) {
      if (p instanceof DataSourceV2Relation r) {
        return relation(r);
      }
      List<Object> args = ScalaInterop.list(p.productIterator());
      boolean changed = false;
      Object[] out = new Object[args.size()];
      for (int i = 0; i < out.length; i++) {
        Object o = args.get(i);
        if (o instanceof DataSourceV2Relation r) { // a write's target (not a child)
          Object n = relation(r);
          changed |= n != o;
          o = n;
        }
        out[i] = o;
      }
      return changed ? p.makeCopy(out) : p;
    }

    private LogicalPlan relation(DataSourceV2Relation r) {
      Table t = table(r.table(), r);
      if (t == r.table()) {
        return r;
      }
      List<Object> args = ScalaInterop.list(r.productIterator());
      Object[] out = args.toArray();
      for (int i = 0; i < out.length; i++) {
        if (out[i] == r.table()) {
          out[i] = t;
        }
      }
      return r.makeCopy(out);
    }

    private Table table(Table old, DataSourceV2Relation r) {
      if (fresh.containsKey(old)) {
        return old;
      }
      Table t = done.get(old);
      if (t == null) {
        try {
          t = load(old, r);
        } catch (Exception e) { // also the catalog's checked NoSuchTableException
          // Kept as analysed: the statement then reads what it read before this change.
          LOG.warn("sparklock: re-loading {} after its locks were granted failed: {}",
              r.name(), e.toString());
          t = old;
        }
        done.put(old, t);
        fresh.put(t, Boolean.TRUE);
      }
      return t;
    }

    private Table load(Table old, DataSourceV2Relation r) throws Exception {
      if (old instanceof RowLevelOperationTable rlo) {
        Table inner = table(rlo.table(), r);
        if (inner == rlo.table() || !(inner instanceof SupportsRowLevelOperations rows)) {
          return old;
        }
        RowLevelOperation op = rlo.operation();
        RowLevelOperation rebuilt = rows.newRowLevelOperationBuilder(
            new RowLevelOperationInfoImpl(op.command(), r.options())).build();
        return new RowLevelOperationTable(rows, rebuilt);
      }
      CatalogPlugin plugin = ScalaInterop.orNull(r.catalog());
      Identifier ident = ScalaInterop.orNull(r.identifier());
      if (!isIceberg(old) || !(plugin instanceof TableCatalog catalog) || ident == null
          || pinnedSnapshot(old)) {
        return old;
      }
      catalog.invalidateTable(ident); // a caching catalog would hand back the same table
      Table loaded = catalog.loadTable(ident);
      if (loaded.getClass() != old.getClass()
          || !loaded.schema().equals(old.schema())
          || !Objects.equals(field(loaded, "branch"), field(old, "branch"))
          || pinnedSnapshot(loaded)) {
        return old;
      }
      return loaded;
    }
  }

  /**
   * A table loaded at a fixed snapshot: time travel ({@code timeTravel}, Iceberg for Spark
   * 4.1; {@code snapshotId}, Iceberg for 3.5 and 4.0). Unknown shapes count as fixed: they are
   * left alone.
   */
  private static boolean pinnedSnapshot(Table t) {
    for (String name : new String[] {"timeTravel", "snapshotId"}) {
      Field f = declared(t.getClass(), name);
      if (f != null && !f.getType().isPrimitive()) {
        return field(t, name) != null;
      }
    }
    return true;
  }

  private static Field declared(Class<?> c, String name) {
    try {
      return c.getDeclaredField(name);
    } catch (NoSuchFieldException e) {
      return null;
    }
  }

  private static Object field(Object o, String name) {
    Field f = declared(o.getClass(), name);
    if (f == null) {
      return null;
    }
    try {
      f.setAccessible(true);
      return f.get(o);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }
}
