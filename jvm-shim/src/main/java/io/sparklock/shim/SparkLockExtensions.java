package io.sparklock.shim;

import io.sparklock.shim.guard.QueryEndListener;
import io.sparklock.shim.hook.EarlyLockRule;
import io.sparklock.shim.hook.ProcedureCalls;
import io.sparklock.shim.hook.SparkLockColumnarRule;
import io.sparklock.shim.statements.LockStatementParser;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.internal.SQLConf$;
import scala.Function1;
import scala.runtime.BoxedUnit;

/**
 * The {@code spark.sql.extensions} entry point: the lock-statement parser, the columnar rule
 * that puts {@link SparkLockExec} at the root of every top-level physical plan, and the rule that
 * turns a {@code CALL} into a command that runs (locked) as any other ({@link ProcedureCalls}), and
 * the optimizer rule that locks a statement of a v2 table before its scans are built
 * ({@link EarlyLockRule}).
 */
public class SparkLockExtensions implements Function1<SparkSessionExtensions, BoxedUnit> {
  /**
   * Keys a session must not change for itself ({@code sparklock.config.APPLICATION_WIDE_KEYS}):
   * who may UNLOCK is the application's decision, so {@code SET}/{@code spark.conf.set} of them
   * fails with Spark's own "Cannot modify the value of a static config".
   */
  static final String[] APPLICATION_WIDE_KEYS = {
    "spark.sparklock.unlock.policy", "spark.sparklock.admins"
  };

  @Override
  public BoxedUnit apply(SparkSessionExtensions ext) {
    for (String key : APPLICATION_WIDE_KEYS) {
      SQLConf$.MODULE$.registerStaticConfigKey(key);
    }
    ext.injectParser((session, delegate) -> new LockStatementParser(session, delegate));
    ProcedureCalls.register(ext); // CALL: locked before its procedure runs (Spark 4.0+)
    // v2 tables (Iceberg): locked while optimized, before their scans fix a snapshot
    ext.injectPreCBORule(session -> new EarlyLockRule(session));
    ext.injectColumnar(session -> {
      QueryEndListener.register(session.sparkContext());
      return new SparkLockColumnarRule();
    });
    return BoxedUnit.UNIT;
  }
}
