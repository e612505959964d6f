package io.sparklock.shim.facts;

import io.sparklock.shim.util.ScalaInterop;
import io.sparklock.shim.wire.Facts.OwnerTable;
import io.sparklock.shim.wire.Facts;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTableType;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils;
import org.apache.spark.sql.catalyst.catalog.SessionCatalog;

/**
 * Path ownership: which session-catalog table a file path belongs to (BRIDGE.md "ownerTable"), so
 * Python locks the table (or partition) rather than a path object. Paths are qualified and printed
 * as Hadoop prints them. The catalog's located tables are listed once per statement, on demand.
 */
final class PathOwners {
  private final SparkSession session;
  private final SessionCatalog catalog;
  /** Session-catalog tables with a location, loaded on the first path of the statement. */
  private List<CatalogTable> located;

  PathOwners(SparkSession session, SessionCatalog catalog) {
    this.session = session;
    this.catalog = catalog;
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

  /**
   * The catalog table whose location is the path or contains it (the deepest), or null; its
   * {@code partition} is the leading spec named by the path's {@code col=value} directories below
   * the table root ({} for the table itself).
   */
  OwnerTable ownerOf(String path, String currentDatabase) {
    if (catalog == null || path == null) {
      return null;
    }
    String norm = normalizePath(path);
    CatalogTable best = null;
    String bestLoc = null;
    for (CatalogTable t : located()) {
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
    String db = best.identifier().database().isDefined()
        ? best.identifier().database().get() : currentDatabase;
    List<String> cols = ScalaInterop.list(best.partitionColumnNames());
    String rest = norm.length() > bestLoc.length() ? norm.substring(bestLoc.length()) : "";
    return new OwnerTable(
        FactsExtractor.SESSION_CATALOG, db, best.identifier().table(), cols, specOf(rest, cols));
  }

  /** The leading partition spec named by {@code col=value} directories, in column order. */
  private static Map<String, String> specOf(String rest, List<String> cols) {
    Map<String, String> spec = new LinkedHashMap<>();
    int i = 0;
    for (String seg : rest.split("/")) {
      if (seg.isEmpty()) {
        continue;
      }
      int eq = seg.indexOf('=');
      if (i >= cols.size() || eq < 0) {
        break;
      }
      String k = ExternalCatalogUtils.unescapePathName(seg.substring(0, eq));
      if (!k.equalsIgnoreCase(cols.get(i))) {
        break;
      }
      String v = ExternalCatalogUtils.unescapePathName(seg.substring(eq + 1));
      spec.put(cols.get(i), ExternalCatalogUtils.DEFAULT_PARTITION_NAME().equals(v) ? null : v);
      i++;
    }
    return spec;
  }

  private List<CatalogTable> located() {
    if (located != null) {
      return located;
    }
    located = new ArrayList<>();
    for (String db : ScalaInterop.list(catalog.listDatabases())) {
      try {
        List<TableIdentifier> persistent = new ArrayList<>();
        for (TableIdentifier id : ScalaInterop.list(catalog.listTables(db))) {
          if (id.database().isDefined()) {
            persistent.add(id);
          }
        }
        List<CatalogTable> tables =
            ScalaInterop.list(catalog.getTablesByName(ScalaInterop.seq(persistent)));
        for (CatalogTable t : tables) {
          if (t.storage().locationUri().isDefined() && t.tableType() != CatalogTableType.VIEW()) {
            located.add(t);
          }
        }
      } catch (Exception e) {
        // a database that cannot be listed owns nothing we can name: the path lock stays
      }
    }
    return located;
  }
}
