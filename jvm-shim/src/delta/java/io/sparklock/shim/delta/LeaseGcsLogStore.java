package io.sparklock.shim.delta;

import io.delta.storage.GCSLogStore;
import org.apache.hadoop.conf.Configuration;

/** The lease-checking store over Delta's {@code GCSLogStore}: gs (Delta's default there). */
public final class LeaseGcsLogStore extends LeaseLogStore {
  public LeaseGcsLogStore(Configuration hadoopConf) {
    super(hadoopConf, new GCSLogStore(hadoopConf));
  }
}
