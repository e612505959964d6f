package io.sparklock.shim.facts;

import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.internal.SQLConf;
import scala.collection.Iterator;

/**
 * What the JVM reads of a session's configuration: whether locking is on, and the {@code
 * spark.sparklock.*} keys it forwards to Python untouched in the facts (Python owns their meaning).
 */
public final class SessionConf {
  public static final String CONF_PREFIX = "spark.sparklock.";
  public static final String ENABLED_KEY = "spark.sparklock.enabled";
  /** Where the session's Hive catalog is: the metastore manager's default URIs. */
  public static final String METASTORE_URIS_KEY = "hive.metastore.uris";
  /** Where a v2 catalog is declared ({@code spark.sql.catalog.<name>[.<property>]}). */
  public static final String CATALOG_PREFIX = "spark.sql.catalog.";
  /**
   * The catalog properties that say which store a catalog's tables live in (Iceberg's {@code
   * type}/{@code catalog-impl} and its metastore {@code uri}): Python decides from them whether a
   * catalog's tables are the metastore manager's own tables. No other property is forwarded
   * (catalogs carry credentials in theirs).
   */
  private static final Set<String> CATALOG_PROPERTIES = Set.of("type", "catalog-impl", "uri");

  private SessionConf() {}

  /** Whether {@code spark.sparklock.enabled} (session conf, default true) is on. */
  public static boolean enabled(SparkSession session) {
    if (session == null) {
      return true;
    }
    String v = session.sessionState().conf().getConfString(ENABLED_KEY, "true");
    // Fail safe: anything but an explicit "false" keeps locking on (Python validates the value).
    return !"false".equalsIgnoreCase(v.trim());
  }

  /**
   * Every {@code spark.sparklock.*} entry of the session conf, sorted, and the session's {@code
   * hive.metastore.uris} (from {@code spark.hadoop.*} or a {@code hive-site.xml}) if it has one:
   * the metastore manager's default, which no {@code spark.sparklock.*} key carries; and of each
   * declared catalog its class and the properties of {@link #CATALOG_PROPERTIES}.
   */
  public static Map<String, String> sessionConf(SparkSession session) {
    Map<String, String> out = new TreeMap<>();
    if (session == null) {
      return out;
    }
    SQLConf conf = session.sessionState().conf();
    Iterator<scala.Tuple2<String, String>> it = conf.getAllConfs().iterator();
    while (it.hasNext()) {
      scala.Tuple2<String, String> kv = it.next();
      if (kv._1().startsWith(CONF_PREFIX) || isCatalogFact(kv._1())) {
        out.put(kv._1(), kv._2());
      }
    }
    String uris = conf.getConfString("spark.hadoop." + METASTORE_URIS_KEY, "");
    if (uris.trim().isEmpty()) {
      String shared = session.sparkContext().hadoopConfiguration().get(METASTORE_URIS_KEY);
      uris = shared == null ? "" : shared;
    }
    if (!uris.trim().isEmpty()) {
      out.put(METASTORE_URIS_KEY, uris.trim());
    }
    return out;
  }

  /** {@code spark.sql.catalog.<name>} or {@code spark.sql.catalog.<name>.<one of the facts>}. */
  static boolean isCatalogFact(String key) {
    if (!key.startsWith(CATALOG_PREFIX)) {
      return false;
    }
    String rest = key.substring(CATALOG_PREFIX.length());
    int dot = rest.indexOf('.');
    return dot < 0 ? !rest.isEmpty() : CATALOG_PROPERTIES.contains(rest.substring(dot + 1));
  }
}
