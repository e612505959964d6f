package io.sparklock.shim.delta;

import io.delta.storage.AzureLogStore;
import org.apache.hadoop.conf.Configuration;

/**
 * The lease-checking store over Delta's {@code AzureLogStore}: abfs, abfss, adl, wasb and wasbs
 * (Delta's default there).
 */
public final class LeaseAzureLogStore extends LeaseLogStore {
  public LeaseAzureLogStore(Configuration hadoopConf) {
    super(hadoopConf, new AzureLogStore(hadoopConf));
  }
}
