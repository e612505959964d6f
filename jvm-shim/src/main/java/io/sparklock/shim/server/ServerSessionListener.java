package io.sparklock.shim.server;

import java.util.Collections;
import java.util.Set;
import java.util.WeakHashMap;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;

/**
 * Hears the end of server sessions (Thrift: {@code SparkListenerThriftServerSessionClosed};
 * Connect: {@code SparkListenerConnectSessionClosed}) by class name, so that it loads with
 * neither server on the class path.
 */
final class ServerSessionListener extends SparkListener {
  private static final Set<SparkContext> REGISTERED =
      Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

  static void register(SparkContext sc) {
    if (REGISTERED.add(sc)) {
      sc.addSparkListener(new ServerSessionListener());
    }
  }

  @Override
  public void onOtherEvent(SparkListenerEvent event) {
    String name = event.getClass().getName();
    if (name.endsWith(".SparkListenerThriftServerSessionClosed")) {
      ServerSessions.sessionClosed("thrift", field(event, "sessionId"));
    } else if (name.endsWith(".SparkListenerConnectSessionClosed")) {
      ServerSessions.sessionClosed("connect", field(event, "sessionId"));
    }
  }

  private static String field(Object event, String accessor) {
    try {
      Object v = event.getClass().getMethod(accessor).invoke(event);
      return v == null ? null : v.toString();
    } catch (ReflectiveOperationException e) {
      return null;
    }
  }
}
