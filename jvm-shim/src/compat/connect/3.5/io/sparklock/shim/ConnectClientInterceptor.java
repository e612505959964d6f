package io.sparklock.shim;

/**
 * pyspark 3.5 ships no Spark Connect server (no {@code spark-connect_*.jar}, no shaded gRPC to
 * implement an interceptor against): nothing installs this class, and {@code connect-server}
 * refuses to start on 3.5 ({@code SPARKLOCK_SETUP_FAILED}). It exists so that every variant of
 * the {@code connect} aspect defines the same classes.
 */
public final class ConnectClientInterceptor {
  private ConnectClientInterceptor() {}
}
