package io.sparklock.shim;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Re-lists, once the locks are granted, the files of the file-based tables a statement reads.
 *
 * <p>Spark lists a table's files before any lock can be taken: when it resolves the relation
 * (or reuses the listing cached with the session's relation) and when partition pruning builds
 * the pruned file index. A writer that committed between that listing and the grant has
 * replaced those files, and the read would fail with {@code FAILED_READ_FILE.FILE_NOT_EXIST}
 * (or miss the new data). The scans compute their file lists lazily, at execution, from these
 * indexes, so refreshing the indexes after the grant makes every scan list what is there while
 * the statement holds its locks.
 *
 * <p>Off with {@code spark.sparklock.read.refreshListing=false}: Python owns the key and answers
 * {@code acquire} with its value ({@link Messages.Acquired#refreshListing}).
 * Not covered: bucketed scans whose file list Spark computed while planning, and V2 file scans
 * (the session catalog reads files through V1 unless {@code spark.sql.sources.useV1SourceList}
 * is changed).
 */
final class FileListings {
  private static final Logger LOG = LoggerFactory.getLogger("io.sparklock.shim.FileListings");

  private FileListings() {}

  /** Refreshes the file index of every file relation in {@code plan}; returns how many. */
  static int refreshAfterGrant(LogicalPlan plan) {
    if (plan == null) {
      return 0;
    }
    Set<FileIndex> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    FactsExtractor.walkPlan(plan, p -> {
      if (p instanceof LogicalRelation
          && ((LogicalRelation) p).relation() instanceof HadoopFsRelation) {
        seen.add(((HadoopFsRelation) ((LogicalRelation) p).relation()).location());
      }
    });
    long start = System.nanoTime();
    for (FileIndex index : seen) {
      index.refresh();
    }
    if (!seen.isEmpty() && LOG.isDebugEnabled()) {
      LOG.debug("sparklock: re-listed {} file index(es) after the grant in {} ms", seen.size(),
          (System.nanoTime() - start) / 1_000_000.0);
    }
    return seen.size();
  }
}
