package io.sparklock.shim.server;

import java.util.Map;
import org.apache.hive.service.Service;
import org.apache.hive.service.cli.CLIService;
import org.apache.hive.service.cli.SessionHandle;
import org.apache.hive.service.cli.session.HiveSession;
import org.apache.hive.service.cli.session.SessionManager;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.hive.thriftserver.server.SparkSQLOperationManager;

/**
 * Finds the JDBC session a {@link SparkSession} serves in a Spark Thrift Server, for its user
 * name and client address. Kept apart so that nothing loads the Thrift Server's classes unless a
 * Thrift Server runs.
 */
final class ThriftSessions {
  record Found(String sessionId, String user, String ipAddress) {}

  private ThriftSessions() {}

  /** The JDBC session whose SparkSession is {@code session}, or null. */
  static Found find(Object server, SparkSession session) {
    SessionManager manager = null;
    for (Service s : ((org.apache.hive.service.CompositeService) server).getServices()) {
      if (s instanceof CLIService) {
        manager = ((CLIService) s).getSessionManager();
      }
    }
    if (manager == null
        || !(manager.getOperationManager() instanceof SparkSQLOperationManager)) {
      return null;
    }
    SparkSQLOperationManager operations = (SparkSQLOperationManager) manager.getOperationManager();
    for (Map.Entry<SessionHandle, ?> e : operations.sessionToContexts().entrySet()) {
      if (sessionOf(e.getValue()) == session) {
        try {
          HiveSession hive = manager.getSession(e.getKey());
          return new Found(
              e.getKey().getSessionId().toString(), hive.getUserName(), hive.getIpAddress());
        } catch (Exception notOpen) {
          return null;
        }
      }
    }
    return null;
  }

  /** A JDBC session's Spark session: Spark 4 maps sessions to it, 3.5 to its SQLContext. */
  private static Object sessionOf(Object context) {
    return context instanceof SQLContext ? ((SQLContext) context).sparkSession() : context;
  }
}
