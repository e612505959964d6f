package io.sparklock.shim.delta;

import io.delta.storage.S3SingleDriverLogStore;
import org.apache.hadoop.conf.Configuration;

/**
 * The lease-checking store over Delta's {@code S3SingleDriverLogStore}: s3, s3a and s3n (Delta's
 * default there).
 */
public final class LeaseS3LogStore extends LeaseLogStore {
  public LeaseS3LogStore(Configuration hadoopConf) {
    super(hadoopConf, new S3SingleDriverLogStore(hadoopConf));
  }
}
