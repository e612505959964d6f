package io.sparklock.shim.bridge;

import java.lang.reflect.Field;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.net.Socket;
import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;
import py4j.ClientServerConnection;
import py4j.Gateway;
import py4j.PythonClient;
import py4j.reflection.PythonProxyHandler;

/**
 * Turns Nagle's algorithm off on the py4j connection a call into Python goes out on.
 *
 * <p>Why: py4j writes a command through an 8 KB buffer, so the facts of a wide read (about 13
 * bytes a partition: a 1,000-partition read is ~13 KB) leave in several writes; with Nagle on
 * (py4j never sets {@code TCP_NODELAY}) the last one waits for the ACK of the first, which
 * Python's side delays by up to 40 ms -- most of what such a call cost. With pinned threads
 * (PySpark's default) the call goes out on the socket of the Python thread that ran the action,
 * opened before sparklock was loaded, so it is set here, once per socket, before each call.
 * Only latency changes; any failure (another py4j, no pinned connection) leaves things as they
 * were.
 */
final class CallbackSockets {
  private static final Map<Socket, Boolean> DONE =
      Collections.synchronizedMap(new WeakHashMap<>());
  private static volatile Field gatewayField;
  private static volatile boolean broken;

  private CallbackSockets() {}

  /** {@code TCP_NODELAY} on the connection the calling thread's callbacks to {@code proxy} use. */
  static void noDelay(Object proxy) {
    if (broken || !Proxy.isProxyClass(proxy.getClass())) {
      return;
    }
    try {
      InvocationHandler handler = Proxy.getInvocationHandler(proxy);
      if (!(handler instanceof PythonProxyHandler)) {
        return;
      }
      Field field = gatewayField;
      if (field == null) {
        field = PythonProxyHandler.class.getDeclaredField("gateway");
        field.setAccessible(true);
        gatewayField = field;
      }
      Gateway gateway = (Gateway) field.get(handler);
      if (!(gateway.getCallbackClient() instanceof PythonClient client)) {
        return;
      }
      ClientServerConnection connection = client.getPerThreadConnection();
      Socket socket = connection == null ? null : connection.getSocket();
      if (socket != null && DONE.putIfAbsent(socket, Boolean.TRUE) == null) {
        socket.setTcpNoDelay(true);
      }
    } catch (ReflectiveOperationException | RuntimeException | java.io.IOException e) {
      broken = true; // not this py4j: calls go on as before
    }
  }
}
