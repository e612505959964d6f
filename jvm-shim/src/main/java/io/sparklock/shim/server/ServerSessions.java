package io.sparklock.shim.server;

import io.sparklock.shim.bridge.PythonNotices;
import io.sparklock.shim.facts.FactsExtractor;
import io.sparklock.shim.util.AwaitCall;
import io.sparklock.shim.wire.Caller;
import io.sparklock.shim.wire.Messages;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Who a statement runs for when sparklock serves many clients (Spark Thrift Server, Spark
 * Connect): the {@code user} and {@code clientAddress} facts, and the end of server sessions.
 *
 * <p>A PySpark program is one user: {@code SparkContext.sparkUser()}, no client address (Python
 * writes the driver's own). A Thrift (JDBC) session is identified through the server's session
 * manager ({@link ThriftSessions}); a Connect operation through the job tag Connect puts on its
 * thread ({@code SparkConnect_OperationTag_User_<user>_Session_<id>_Operation_<id>}), with the
 * client address recorded by {@link ConnectClientInterceptor} when it is installed.
 *
 * <p>When a server session closes, Python is told ({@code sessionClosed}) so that it can end the
 * session's lock waits and, with {@code spark.sparklock.explicit.onSessionClose=release}, release
 * its LOCK TABLE locks.
 */
public final class ServerSessions {
  private static final Logger LOG = LoggerFactory.getLogger("io.sparklock.shim.ServerSessions");
  static final String CONNECT_TAG_PREFIX = "SparkConnect_OperationTag_User_";

  private static volatile Object thriftServer;

  /** Identities of server sessions by {@code SparkSession.sessionUUID}. */
  private static final Map<String, Caller> BY_SPARK_SESSION = new ConcurrentHashMap<>();

  /** "thrift:&lt;hive session id&gt;" / "connect:&lt;session id&gt;" → sessionUUID. */
  private static final Map<String, String> SPARK_SESSION_OF = new ConcurrentHashMap<>();

  /** Connect session id → the client's address (from the gRPC interceptor). */
  static final Map<String, String> CONNECT_CLIENTS = new ConcurrentHashMap<>();

  private static final ExecutorService NOTIFIER =
      Executors.newSingleThreadExecutor(AwaitCall.daemon("sparklock-session-end"));

  private ServerSessions() {}

  /** This JVM serves a Spark Thrift Server ({@code HiveThriftServer2}); called from Python. */
  public static void serveThrift(Object server, SparkContext sc) {
    thriftServer = server;
    PythonNotices.serving(sc);
    ServerSessionListener.register(sc);
  }

  /** This JVM serves Spark Connect; called from Python. */
  public static void serveConnect(SparkContext sc) {
    PythonNotices.serving(sc);
    ServerSessionListener.register(sc);
  }

  /** The identity of the statement running on this thread in {@code session}. */
  public static Caller identify(SparkSession session, SparkContext sc) {
    String uuid = FactsExtractor.sessionId(session);
    try {
      Caller connect = connectCaller(uuid, sc);
      if (connect != null) {
        return connect;
      }
      if (uuid != null) {
        Caller known = BY_SPARK_SESSION.get(uuid);
        if (known != null) {
          return known;
        }
      }
      Object server = thriftServer;
      if (server != null && session != null) {
        ThriftSessions.Found found = ThriftSessions.find(server, session);
        if (found != null) {
          Caller id = new Caller(found.user(), found.ipAddress(),
              "thrift/" + found.sessionId());
          if (uuid != null) {
            BY_SPARK_SESSION.put(uuid, id);
            SPARK_SESSION_OF.put("thrift:" + found.sessionId(), uuid);
          }
          return id;
        }
      }
    } catch (RuntimeException | LinkageError e) {
      LOG.debug("sparklock: identifying the server session failed: {}", e.toString());
    }
    return new Caller(sc == null ? null : sc.sparkUser(), null,
        sc == null ? null : sc.applicationId());
  }

  private static Caller connectCaller(String uuid, SparkContext sc) {
    if (sc == null) {
      return null;
    }
    for (scala.collection.Iterator<String> it = sc.getJobTags().iterator(); it.hasNext(); ) {
      String tag = it.next();
      if (!tag.startsWith(CONNECT_TAG_PREFIX)) {
        continue;
      }
      String rest = tag.substring(CONNECT_TAG_PREFIX.length());
      int s = rest.lastIndexOf("_Session_");
      int o = rest.lastIndexOf("_Operation_");
      if (s < 0 || o < s) {
        continue;
      }
      String user = rest.substring(0, s);
      String sessionId = rest.substring(s + "_Session_".length(), o);
      if (uuid != null) {
        SPARK_SESSION_OF.put("connect:" + sessionId, uuid);
      }
      // A client that sends no user id (pyspark's remote("local[...]")) runs as the Spark user.
      return new Caller(user.isEmpty() ? sc.sparkUser() : user, CONNECT_CLIENTS.get(sessionId),
          "connect/" + sessionId);
    }
    return null;
  }

  /** A Connect request of {@code sessionId} came from {@code client} ({@link
   * ConnectClientInterceptor}, before the request runs). */
  public static void connectClient(String sessionId, String client) {
    CONNECT_CLIENTS.put(sessionId, client);
  }

  /** A server session ended ({@code kind} thrift|connect): tell Python, off the caller's thread. */
  static void sessionClosed(String kind, String serverSessionId) {
    String uuid = SPARK_SESSION_OF.remove(kind + ":" + serverSessionId);
    if ("connect".equals(kind)) {
      CONNECT_CLIENTS.remove(serverSessionId);
    }
    if (uuid == null) {
      return; // it never ran a statement that locks: nothing to release or end
    }
    BY_SPARK_SESSION.remove(uuid);
    NOTIFIER.submit(
        () -> {
          PythonNotices.sessionClosed(
              new Messages.SessionClosedRequest(uuid, kind + ":" + serverSessionId));
        });
  }
}
