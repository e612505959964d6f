package io.sparklock.shim;

import io.sparklock.shim.bridge.PythonCalls;
import io.sparklock.shim.facts.SessionConf;
import io.sparklock.shim.hook.SparkLockColumnarRule;
import io.sparklock.shim.lease.FenceTags;
import io.sparklock.shim.lease.Lease;
import io.sparklock.shim.server.ServerSessions;
import io.sparklock.shim.telemetry.LockMetrics;
import io.sparklock.shim.telemetry.LockTelemetry;
import io.sparklock.shim.ui.LocksUi;
import io.sparklock.shim.util.JobCancellation;
import io.sparklock.shim.wire.LockCallback;
import io.sparklock.shim.wire.Messages;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.ColumnarRule;
import scala.collection.Iterator;

/**
 * The door Python enters the JVM by (jvm-shim/BRIDGE.md): every static method Python calls over
 * py4j is here, so the Python side names one class and the role packages behind it can move
 * without Python noticing. The JVM's calls the other way go through {@link PythonCalls}.
 */
public final class SparkLockBridge {
  private SparkLockBridge() {}

  /** Attach the Python callback (BRIDGE.md: once per JVM; a later call replaces it). */
  public static void setCallback(LockCallback cb) {
    PythonCalls.setCallback(cb);
  }

  /** The attached callback, or null. */
  public static LockCallback callback() {
    return PythonCalls.callback();
  }

  /** Add the Locks tab to {@code sc}'s live UI (once per context); whether the UI has it. */
  public static boolean attachLocksTab(SparkContext sc) {
    return LocksUi.attach(sc);
  }

  /** The session's {@code spark.sparklock.*} entries as the facts carry them. */
  public static Map<String, String> sessionConf(SparkSession session) {
    return SessionConf.sessionConf(session);
  }

  /** {@link #sessionConf} as a JSON object (tests, debugging). */
  public static String sessionConfJson(SparkSession session) {
    return Messages.write(SessionConf.sessionConf(session));
  }

  /** Whether the sparklock extension is installed in this session (its columnar rule is). */
  public static boolean installed(SparkSession session) {
    Iterator<ColumnarRule> it = session.sessionState().columnarRules().iterator();
    while (it.hasNext()) {
      if (it.next() instanceof SparkLockColumnarRule) {
        return true;
      }
    }
    return false;
  }

  /**
   * Fencing (BRIDGE.md): Python calls it when the handle's locks are lost. The statement's lease
   * is fenced (its commits refused from now on, see {@link Lease#lost}) and the jobs run while
   * it held its locks (they carry {@link FenceTags#of}) are cancelled.
   */
  public static void cancelFencedJobs(SparkContext sc, String handle, String reason) {
    Lease.lost(sc, handle, reason);
  }

  /** An UNLOCK removed {@code handle}'s locks: see {@link Lease#revoke} (its answer). */
  public static String revokeLocks(String handle, String reason) {
    return Lease.revoke(handle, reason);
  }

  /** A lease renewal Python pushes (docs/fencing.md): see {@link Lease#renew}. */
  public static void renewLease(long epoch, long deadlineNanos) {
    Lease.renew(epoch, deadlineNanos);
  }

  /** The fences this JVM applied, for the fault tests: see {@link Lease#fences}. */
  public static String leaseFences() {
    return Lease.fences();
  }

  /** What only Python sees, for the metrics and events: see {@link LockTelemetry#report}. */
  public static void reportTelemetry(String reportsJson) {
    LockTelemetry.report(reportsJson);
  }

  /** Registers the {@code sparklock} metrics source of this context (once). */
  public static void registerMetrics(SparkContext sc) {
    LockMetrics.of(sc);
  }

  /** A Thrift server's JVM: its sessions' users, clients and cancels (BRIDGE.md). */
  public static void serveThrift(Object server, SparkContext sc) {
    ServerSessions.serveThrift(server, sc);
  }

  /** A Spark Connect server's JVM: its sessions' users, clients and interrupts. */
  public static void serveConnect(SparkContext sc) {
    ServerSessions.serveConnect(sc);
  }
}
