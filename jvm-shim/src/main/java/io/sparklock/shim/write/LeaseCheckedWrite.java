package io.sparklock.shim.write;

import io.sparklock.shim.lease.Lease;
import java.io.Serializable;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import org.apache.spark.sql.connector.write.BatchWrite;

/**
 * The behaviour of a checked {@code Write} / {@code BatchWrite} proxy ({@link CheckedWrites}):
 * every call goes to the original, except that {@code toBatch} answers a checked batch and a
 * batch's {@code commit} (each overload) checks the statement's lease first ({@link Lease#checkCommit}: the
 * statement's thread is the one Spark commits on). Serializable as its target is, should Spark
 * ship the plan node.
 */
final class LeaseCheckedWrite implements InvocationHandler, Serializable {
  private static final long serialVersionUID = 1L;

  private final Object target;

  LeaseCheckedWrite(Object target) {
    this.target = target;
  }

  static boolean isChecked(Object o) {
    return Proxy.isProxyClass(o.getClass())
        && Proxy.getInvocationHandler(o) instanceof LeaseCheckedWrite;
  }

  private static Object unwrap(Object o) {
    return o != null && isChecked(o) ? ((LeaseCheckedWrite) Proxy.getInvocationHandler(o)).target
        : o;
  }

  @Override
  public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
    String name = method.getName();
    int arity = args == null ? 0 : args.length;
    if (name.equals("equals") && arity == 1) {
      return target.equals(unwrap(args[0]));
    }
    // Every commit overload (Spark 4.x adds commit(messages, WriteSummary), whose default calls
    // the one-argument commit on the original, out of the proxy's sight).
    if (name.equals("commit") && arity >= 1 && target instanceof BatchWrite) {
      CheckedWrites.awaitRelease();
      // Throws LOCKS_LOST under a lapsed lease; Spark's write node then aborts the batch.
      Lease.checkCommit("the commit of " + target);
    }
    Object result;
    try {
      result = method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
    if (name.equals("toBatch") && arity == 0 && result instanceof BatchWrite) {
      return CheckedWrites.proxy(result);
    }
    return result;
  }
}
