package io.sparklock.shim.statements;

import static io.sparklock.shim.statements.StatementErrors.analysis;
import static io.sparklock.shim.statements.StatementErrors.analysisError;
import static io.sparklock.shim.statements.StatementErrors.quote;
import static io.sparklock.shim.statements.StatementErrors.quoted;
import static io.sparklock.shim.statements.StatementErrors.scalaMap;

import io.sparklock.shim.facts.DeltaConstraints;
import io.sparklock.shim.facts.Refs;
import io.sparklock.shim.util.ScalaInterop;
import io.sparklock.shim.wire.Messages;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.AnalysisException;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.analysis.NoSuchDatabaseException;
import org.apache.spark.sql.catalyst.analysis.NoSuchPartitionException;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.SessionCatalog;
import org.apache.spark.sql.connector.catalog.CatalogManager;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import scala.Option;

/**
 * What a lock statement names, resolved as Spark resolves a name: a leading part naming a
 * configured catalog picks it, else the current catalog ({@code USE cat.ns}) with its current
 * namespace. Session-catalog names go through the session catalog (database default = current
 * database; temp views refused); a table of another catalog is loaded from its {@code
 * TableCatalog} (its identity partition columns order a spec). LOCK needs
 * the object to exist (table, database, partition or partition prefix), as Hive does: names become
 * the catalog's stored names and a partition spec the table's partition-column order (BRIDGE.md
 * "Command requests"). UNLOCK and SHOW LOCKS also take an object that no longer exists (or never
 * did) by the name as written, so an explicit lock can always be removed in SQL, even after its
 * table or database was dropped.
 */
final class LockTargets {
  /** The session catalog's name: Spark's constant, the one the JVM and Python compare with. */
  static final String SESSION_CATALOG = CatalogManager.SESSION_CATALOG_NAME();

  private final LockStatementCommand statement;
  private final SparkSession session;

  private LockTargets(LockStatementCommand statement, SparkSession session) {
    this.statement = statement;
    this.session = session;
  }

  /** The resolved object of {@code statement} (which names one). */
  static Messages.LockTarget resolve(LockStatementCommand statement, SparkSession session)
      throws AnalysisException {
    LockTargets targets = new LockTargets(statement, session);
    String other = targets.otherCatalog();
    if (other != null) {
      return statement.isDatabase() ? targets.catalogNamespace(other) : targets.catalogTable(other);
    }
    return statement.isDatabase() ? targets.database() : targets.table();
  }

  /**
   * The catalog other than the session catalog that the name resolves in (its first part, or
   * the current catalog for a name without one), or null for the session catalog. A one-part
   * name that is a temporary view stays the session's, as Spark resolves temp views first.
   */
  private String otherCatalog() {
    List<String> parts = statement.nameParts();
    CatalogManager catalogs = session.sessionState().catalogManager();
    if (parts.size() >= 2 && parts.get(0).equalsIgnoreCase(SESSION_CATALOG)) {
      return null;
    }
    if (parts.size() >= 2 && isOtherCatalog(parts.get(0))) {
      return parts.get(0);
    }
    String current = catalogs.currentCatalog().name();
    if (current.equalsIgnoreCase(SESSION_CATALOG)
        || (!statement.isDatabase() && parts.size() == 1
            && session.sessionState().catalog().isTempView(ScalaInterop.seq(parts)))) {
      return null;
    }
    return current;
  }

  /**
   * The plugin of a catalog, loaded only where the statement needs it (LOCK checks existence,
   * a PARTITION clause needs the partition columns): UNLOCK and SHOW LOCKS by name work even
   * while the catalog cannot load, so a lock in it stays visible and removable.
   */
  private CatalogPlugin plugin(String catalog) {
    return session.sessionState().catalogManager().catalog(catalog);
  }

  /** Name parts without an explicit {@code spark_catalog.} prefix. */
  private List<String> sessionCatalogParts() {
    List<String> parts = new ArrayList<>(statement.nameParts());
    if (parts.size() >= 2 && parts.get(0).equalsIgnoreCase(SESSION_CATALOG)) {
      return parts.subList(1, parts.size());
    }
    return parts;
  }

  /** The name's parts after the catalog: all of them when it names none (the current one's). */
  private List<String> partsIn(String catalog) {
    List<String> parts = statement.nameParts();
    boolean explicit = parts.size() >= 2 && parts.get(0).equals(catalog)
        && isOtherCatalog(parts.get(0));
    return explicit ? parts.subList(1, parts.size()) : parts;
  }

  /** A table (or partition) of another catalog: {@code cat.ns1.ns2.t}, or {@code t} after USE. */
  private Messages.LockTarget catalogTable(String catalog) throws AnalysisException {
    List<String> parts = partsIn(catalog);
    String[] namespace = parts.size() == 1 && parts.size() == statement.nameParts().size()
        ? session.sessionState().catalogManager().currentNamespace()
        : parts.subList(0, parts.size() - 1).toArray(new String[0]);
    String name = parts.get(parts.size() - 1);
    List<String> shown = new ArrayList<>();
    shown.add(catalog);
    shown.addAll(Arrays.asList(namespace));
    shown.add(name);
    List<String> partitionColumns = List.of();
    if (!byNameWhenMissing() || statement.partitionSpec() != null) {
      if (!(plugin(catalog) instanceof TableCatalog tables)) {
        throw unsupportedCatalog(catalog);
      }
      try {
        partitionColumns = Refs.identityColumns(tables.loadTable(Identifier.of(namespace, name)));
      } catch (AnalysisException e) { // NoSuchTableException: LOCK needs the table
        if (!byNameWhenMissing()) {
          throw e;
        }
        partitionColumns = null;
      }
    }
    List<List<String>> partition = new ArrayList<>();
    if (partitionColumns == null) {
      for (String[] kv : statement.partitionSpec()) { // a missing table: the spec as written
        partition.add(Arrays.asList(kv[0], kv[1]));
      }
    } else {
      for (String[] kv : normalizeSpec(partitionColumns, shown)) {
        partition.add(Arrays.asList(kv[0], kv[1]));
      }
    }
    return new Messages.LockTarget(Refs.namespaceText(namespace), name, partition,
        catalog, Arrays.asList(namespace));
  }

  /** A namespace of another catalog: {@code LOCK DATABASE cat.ns} (or {@code ns} after USE). */
  private Messages.LockTarget catalogNamespace(String catalog) throws AnalysisException {
    String[] namespace = partsIn(catalog).toArray(new String[0]);
    if (!byNameWhenMissing()) {
      if (!(plugin(catalog) instanceof SupportsNamespaces namespaces)) {
        throw unsupportedCatalog(catalog);
      }
      namespaces.loadNamespaceMetadata(namespace); // NoSuchNamespaceException
    }
    return new Messages.LockTarget(Refs.namespaceText(namespace), null, null, catalog,
        Arrays.asList(namespace));
  }

  /**
   * Whether {@code name} names a configured catalog ({@code spark.sql.catalog.<name>}), checked
   * on the conf rather than by loading the plugin (UNLOCK and SHOW LOCKS by name need no plugin).
   */
  private boolean isOtherCatalog(String name) {
    return session.sessionState().conf().contains("spark.sql.catalog." + name);
  }

  private Messages.LockTarget database() throws AnalysisException {
    List<String> parts = sessionCatalogParts();
    if (parts.size() != 1) {
      throw analysis("REQUIRES_SINGLE_PART_NAMESPACE", "sessionCatalog", SESSION_CATALOG,
          "identifier", quoted(statement.nameParts()));
    }
    SessionCatalog catalog = session.sessionState().catalog();
    String db = parts.get(0);
    if (!catalog.databaseExists(db)) {
      if (byNameWhenMissing()) {
        return new Messages.LockTarget(db, null, null);
      }
      throw new NoSuchDatabaseException(db);
    }
    return new Messages.LockTarget(catalog.getDatabaseMetadata(db).name(), null, null);
  }

  private Messages.LockTarget table() throws AnalysisException {
    List<String> parts = sessionCatalogParts();
    SessionCatalog catalog = session.sessionState().catalog();
    if (parts.size() > 2) {
      throw analysis("REQUIRES_SINGLE_PART_NAMESPACE", "sessionCatalog", SESSION_CATALOG,
          "identifier", quoted(statement.nameParts()));
    }
    boolean explicitCatalog = parts.size() != statement.nameParts().size();
    if (!explicitCatalog && catalog.isTempView(ScalaInterop.seq(parts))) {
      throw StatementErrors.errorOrMessage("EXPECT_TABLE_NOT_VIEW.NO_ALTERNATIVE",
          "'" + statement.operation() + "' expects a table. " + quoted(parts) + " is a view",
          "operation", statement.operation(), "viewName", quoted(parts));
    }
    TableIdentifier ident = parts.size() == 1
        ? new TableIdentifier(parts.get(0))
        : new TableIdentifier(parts.get(1), Option.apply(parts.get(0)));
    if (byNameWhenMissing() && !catalog.tableExists(ident)) {
      return asWritten(catalog, parts);
    }
    CatalogTable meta = catalog.getTableMetadata(ident); // NoSuchTable / NoSuchDatabase
    String db = meta.identifier().database().isDefined()
        ? meta.identifier().database().get()
        : catalog.getCurrentDatabase();
    String table = meta.identifier().table();

    // a Delta table's partitions are in its log, not the catalog: its columns from the log, and
    // any value names a partition (Delta has no empty partition to find)
    boolean delta = "delta".equalsIgnoreCase(Refs.providerOf(meta));
    List<String> partitionColumns = delta && meta.partitionColumnNames().isEmpty()
        ? DeltaConstraints.partitionColumnsAt(session, meta.location().toString())
        : ScalaInterop.list(meta.partitionColumnNames());
    List<String[]> normalized =
        normalizeSpec(partitionColumns, Arrays.asList(SESSION_CATALOG, db, table));
    if (!normalized.isEmpty() && !byNameWhenMissing() && !delta) {
      requireExistingPartition(catalog, db, table, normalized);
    }
    List<List<String>> partition = new ArrayList<>();
    for (String[] kv : normalized) {
      partition.add(Arrays.asList(kv[0], kv[1])); // a null value stays null
    }
    return new Messages.LockTarget(db, table, partition);
  }

  /**
   * UNLOCK and SHOW LOCKS name what may be locked, not what exists: a lock can outlive its
   * object (LOCK TABLE t; DROP TABLE t), and must stay removable and visible by name.
   */
  private boolean byNameWhenMissing() {
    return statement.kind() != LockStatementCommand.Kind.LOCK;
  }

  /** A missing table as written: database defaulted, spec in the order given (no columns known). */
  private Messages.LockTarget asWritten(SessionCatalog catalog, List<String> parts) {
    String db = parts.size() == 2 ? parts.get(0) : catalog.getCurrentDatabase();
    List<List<String>> partition = new ArrayList<>();
    if (statement.partitionSpec() != null) {
      for (String[] kv : statement.partitionSpec()) {
        partition.add(Arrays.asList(kv[0], kv[1]));
      }
    }
    return new Messages.LockTarget(db, parts.get(parts.size() - 1), partition);
  }

  /** A partition, or a partition prefix, must match at least one existing partition. */
  private static void requireExistingPartition(SessionCatalog catalog, String db, String table,
      List<String[]> normalized) throws NoSuchPartitionException {
    Map<String, String> specMap = new LinkedHashMap<>();
    for (String[] kv : normalized) {
      specMap.put(kv[0], kv[1]);
    }
    TableIdentifier qualified = new TableIdentifier(table, Option.apply(db));
    boolean exists;
    try {
      exists = !catalog.listPartitions(qualified, Option.apply(scalaMap(specMap))).isEmpty();
    } catch (Exception e) {
      if (e instanceof NoSuchPartitionException) {
        exists = false;
      } else {
        throw StatementErrors.sneaky(e);
      }
    }
    if (!exists) {
      throw new NoSuchPartitionException(db, table, scalaMap(specMap));
    }
  }

  /**
   * The spec as (partition column, value) pairs in the table's partition-column order. Every
   * column must be a partition column; together they must be a leading prefix of the partition
   * columns (a partition, or a partition prefix such as {@code p=1} of {@code (p, q)}).
   */
  private List<String[]> normalizeSpec(List<String> partitionColumns, List<String> shownName)
      throws AnalysisException {
    List<String[]> out = new ArrayList<>();
    List<String[]> spec = statement.partitionSpec();
    if (spec == null) {
      return out;
    }
    boolean caseSensitive = session.sessionState().conf().caseSensitiveAnalysis();
    String tableName = quoted(shownName);
    String operation = statement.operation();
    Map<String, String> byColumn = new LinkedHashMap<>();
    for (String[] kv : spec) {
      String column = null;
      for (String c : partitionColumns) {
        if (caseSensitive ? c.equals(kv[0]) : c.equalsIgnoreCase(kv[0])) {
          column = c;
        }
      }
      if (column == null) {
        String detail = partitionColumns.isEmpty()
            ? "table " + tableName + " is not partitioned"
            : "the partition columns of table " + tableName + " are "
                + quoted(partitionColumns, ", ");
        throw analysis("NON_PARTITION_COLUMN", "columnName", quote(kv[0]) + " (" + detail + ")");
      }
      if (byColumn.containsKey(column)) {
        throw analysisError("PARTITION clause of " + operation + " names partition column "
            + quote(column) + " of table " + tableName + " more than once");
      }
      byColumn.put(column, kv[1]);
    }
    for (int i = 0; i < partitionColumns.size() && out.size() < byColumn.size(); i++) {
      String c = partitionColumns.get(i);
      if (!byColumn.containsKey(c)) {
        throw analysisError("PARTITION clause of " + operation + " on table " + tableName
            + " must give the leading partition columns (" + quoted(partitionColumns, ", ")
            + ") in order, but " + quote(c) + " is missing: it names no partition or partition"
            + " prefix");
      }
      out.add(new String[] {c, byColumn.get(c)});
    }
    return out;
  }

  private AnalysisException unsupportedCatalog(String catalogName) {
    return analysis("UNSUPPORTED_FEATURE.CATALOG_OPERATION", "catalogName", quote(catalogName),
        "operation", statement.operation() + " (the catalog names no tables or namespaces)");
  }
}
