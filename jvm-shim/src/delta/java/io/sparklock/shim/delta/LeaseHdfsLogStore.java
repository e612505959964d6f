package io.sparklock.shim.delta;

import io.delta.storage.HDFSLogStore;
import org.apache.hadoop.conf.Configuration;

/**
 * The lease-checking store over Delta's {@code HDFSLogStore}: HDFS-compatible file systems and
 * the local one (Delta's default for every scheme it has no other default for).
 */
public final class LeaseHdfsLogStore extends LeaseLogStore {
  public LeaseHdfsLogStore(Configuration hadoopConf) {
    super(hadoopConf, new HDFSLogStore(hadoopConf));
  }
}
