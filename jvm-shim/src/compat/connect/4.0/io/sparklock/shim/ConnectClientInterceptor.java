package io.sparklock.shim;

import io.sparklock.shim.server.ServerSessions;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.sparkproject.connect.grpc.ForwardingServerCallListener;
import org.sparkproject.connect.grpc.Grpc;
import org.sparkproject.connect.grpc.Metadata;
import org.sparkproject.connect.grpc.ServerCall;
import org.sparkproject.connect.grpc.ServerCallHandler;
import org.sparkproject.connect.grpc.ServerInterceptor;

/**
 * Records each Spark Connect session's client address, which Spark Connect itself does not keep
 * (installed by {@code python -m sparklock connect-server} through
 * {@code spark.connect.grpc.interceptor.classes}).
 *
 * <p>Every Connect request names its session ({@code session_id}); the peer address is the call's
 * {@code TRANSPORT_ATTR_REMOTE_ADDR}. Both are noted before the request is handled, so the
 * statement it runs finds its client in {@link ServerSessions#identify} ({@code SHOW LOCKS
 * EXTENDED}'s {@code client}, the lock data's client field). Spark 4.0 to 4.3 shade gRPC as
 * {@code org.sparkproject.connect.grpc}; pyspark 3.5 ships no Connect server (its variant is an
 * empty class that nothing installs).
 */
public final class ConnectClientInterceptor implements ServerInterceptor {
  /** {@code getSessionId} of each request class (none: the class has no session id). */
  private static final Map<Class<?>, Method> SESSION_ID = new ConcurrentHashMap<>();

  private static final Method NONE;

  static {
    try {
      NONE = Object.class.getMethod("hashCode");
    } catch (NoSuchMethodException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  @Override
  public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
      ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
    String client = hostOf(call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR));
    ServerCall.Listener<ReqT> listener = next.startCall(call, headers);
    if (client == null) {
      return listener;
    }
    return new ForwardingServerCallListener.SimpleForwardingServerCallListener<ReqT>(listener) {
      @Override
      public void onMessage(ReqT message) {
        String session = sessionIdOf(message);
        if (session != null && !session.isEmpty()) {
          ServerSessions.connectClient(session, client);
        }
        super.onMessage(message);
      }
    };
  }

  /** The peer's IP address as Hive writes a client ({@code 10.0.0.5}), null when unknown. */
  static String hostOf(SocketAddress address) {
    if (address instanceof InetSocketAddress inet) {
      return inet.getAddress() != null ? inet.getAddress().getHostAddress() : inet.getHostString();
    }
    return null;
  }

  private static String sessionIdOf(Object message) {
    if (message == null) {
      return null;
    }
    Method getter =
        SESSION_ID.computeIfAbsent(
            message.getClass(),
            c -> {
              try {
                return c.getMethod("getSessionId");
              } catch (NoSuchMethodException e) {
                return NONE;
              }
            });
    if (getter == NONE) {
      return null;
    }
    try {
      Object id = getter.invoke(message);
      return id == null ? null : id.toString();
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }
}
