package io.sparklock.shim;

import org.apache.spark.sql.SparkSessionExtensions;
import scala.Function1;
import scala.runtime.BoxedUnit;

/**
 * The {@code spark.sql.extensions} entry point: the lock-statement parser and the columnar rule
 * that puts {@link SparkLockExec} at the root of every top-level physical plan.
 */
public class SparkLockExtensions implements Function1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions ext) {
    ext.injectParser((session, delegate) -> new LockStatementParser(session, delegate));
    ext.injectColumnar(session -> {
      QueryEndListener.register(session.sparkContext());
      return new SparkLockColumnarRule();
    });
    return BoxedUnit.UNIT;
  }
}
