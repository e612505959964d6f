package io.sparklock.shim.facts;

import java.util.Map;
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
   * the metastore manager's default, which no {@code spark.sparklock.*} key carries.
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
      if (kv._1().startsWith(CONF_PREFIX)) {
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
}
