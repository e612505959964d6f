package io.sparklock.shim.facts;

import io.sparklock.shim.wire.Facts.ConnectorRef;
import io.sparklock.shim.wire.Facts;
import org.apache.spark.sql.execution.datasources.jdbc.JDBCOptions;
import org.apache.spark.sql.execution.datasources.jdbc.JDBCRelation;

/**
 * JDBC tables as lock targets (BRIDGE.md, {@code ConnectorField}): a write through the
 * {@code jdbc} data source names its table by {@code url} and {@code dbtable}, a read is a
 * {@code JDBCRelation}; both become the same credential-free identity, so readers and writers of
 * one table through sparklock meet on one lock object.
 */
final class JdbcTargets {
  private JdbcTargets() {}

  /**
   * A JDBC table's identity: the URL without what may carry credentials (properties after
   * {@code ;} or {@code ?}, a {@code user[:password]@} or Oracle's {@code user/password@}), a
   * slash, the table as written. Every writer of one table computes the same text.
   */
  static String target(String url, String table) {
    String u = url.trim();
    int cut = u.length();
    for (char c : new char[] {';', '?'}) {
      int i = u.indexOf(c);
      if (i >= 0 && i < cut) {
        cut = i;
      }
    }
    u = u.substring(0, cut);
    int at = u.lastIndexOf('@');
    if (at >= 0) {
      int sub = u.indexOf(':', "jdbc:".length()); // end of the sub-protocol (jdbc:mysql:)
      u = u.substring(0, sub < 0 || sub > at ? "jdbc:".length() : sub + 1) + u.substring(at + 1);
    }
    return u + "/" + table.trim();
  }

  /**
   * What a JDBC relation reads: its table ({@code dbtable}) as a lockable connector ref; a read
   * of a {@code query} names no table (an unlockable connector ref).
   */
  static ConnectorRef readOf(JDBCRelation relation) {
    JDBCOptions options = relation.jdbcOptions();
    scala.Option<String> table = options.parameters().get("dbtable");
    if (table.isEmpty()) {
      return new ConnectorRef("jdbc", null);
    }
    return new ConnectorRef("jdbc", target(options.url(), table.get()));
  }
}
