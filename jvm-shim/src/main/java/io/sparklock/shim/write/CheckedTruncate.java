package io.sparklock.shim.write;

import io.sparklock.shim.lease.Lease;
import io.sparklock.shim.util.ScalaInterop;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTablePartition;
import org.apache.spark.sql.catalyst.catalog.SessionCatalog;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.command.DDLUtils;
import org.apache.spark.sql.execution.command.ExecutedCommandExec;
import org.apache.spark.sql.execution.command.TruncateTableCommand;
import org.apache.spark.sql.util.PartitioningUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;
import scala.collection.immutable.Map;

/**
 * {@code TRUNCATE TABLE} of a partitioned table, checked against the lease before each
 * partition (docs/fencing.md).
 *
 * <p>Spark's {@code TruncateTableCommand} deletes and re-creates every partition's location in
 * one loop, through the session's Hadoop configuration, with no callback between two locations:
 * a lease lapsing during the loop would let the remaining deletes run. So where the command
 * would delete more than one partition, the statement runs Spark's own command once per
 * partition instead (the partitions the command would have listed, each with its full spec),
 * checking the lease before each: a lapsed lease refuses the next partition, and the ones not
 * reached keep their data. Each run is Spark's whole command (its checks, its permissions and
 * ACLs kept on the re-created directory, the cache refresh and statistics), so the result of an
 * unfenced statement is the same; the table's cache is refreshed once per partition.
 *
 * <p>Anything unusual (a subclass of the command, a table that is not partitioned or whose
 * partitions the catalog does not track, a spec naming no column, one partition or none) runs
 * the command as planned: Spark raises its own errors, and a single delete needs no check
 * beyond the statement's start.
 */
public final class CheckedTruncate {
  private static final Logger LOG = LoggerFactory.getLogger("io.sparklock.shim.CheckedTruncate");

  /** Partitions truncated one at a time so far (the tests' evidence that the split ran). */
  private static final AtomicLong PARTITIONS = new AtomicLong();

  private CheckedTruncate() {}

  /**
   * {@code plan.executeCollect()}; a partitioned TRUNCATE one partition at a time when the
   * statement runs under a lease (nothing to check otherwise).
   */
  public static InternalRow[] executeCollect(SparkPlan plan) {
    TruncateTableCommand cmd = truncateOf(plan); // every statement passes here: cheapest first
    if (cmd == null || !Lease.checksCurrentThread()) {
      return plan.executeCollect();
    }
    SparkSession session = plan.session();
    List<CatalogTablePartition> parts = partitions(session, cmd);
    if (parts == null || parts.size() < 2) {
      return plan.executeCollect();
    }
    String table = cmd.tableName().unquotedString();
    LOG.info("sparklock: TRUNCATE TABLE {}: {} partitions, the lease checked before each",
        table, parts.size());
    for (CatalogTablePartition part : parts) {
      Lease.checkStep("the truncate of " + table + " partition (" + specText(part) + ")");
      new TruncateTableCommand(cmd.tableName(), Option.apply(part.spec())).run(session);
      PARTITIONS.incrementAndGet();
    }
    return new InternalRow[0];
  }

  public static long partitionsTruncated() {
    return PARTITIONS.get();
  }

  private static String specText(CatalogTablePartition part) {
    StringBuilder b = new StringBuilder();
    ScalaInterop.map(part.spec()).forEach((k, v) -> b.append(b.length() > 0 ? ", " : "")
        .append(k).append('=').append(v));
    return b.toString();
  }

  private static TruncateTableCommand truncateOf(SparkPlan plan) {
    if (plan instanceof ExecutedCommandExec) {
      Object cmd = ((ExecutedCommandExec) plan).cmd();
      if (cmd.getClass() == TruncateTableCommand.class) {
        return (TruncateTableCommand) cmd;
      }
    }
    return null;
  }

  /** The partitions the command would truncate, in the catalog's order; null: run it as is. */
  private static List<CatalogTablePartition> partitions(SparkSession session,
      TruncateTableCommand cmd) {
    try {
      SessionCatalog catalog = session.sessionState().catalog();
      CatalogTable table = catalog.getTableMetadata(cmd.tableName());
      if (table.partitionColumnNames().isEmpty()) {
        return null;
      }
      // What TRUNCATE ... PARTITION requires (a Hive table, or a data source table whose
      // partitions the catalog tracks): else Spark's own command decides.
      DDLUtils.verifyPartitionProviderIsHive(session, table, "TRUNCATE TABLE ... PARTITION");
      Option<Map<String, String>> spec = cmd.partitionSpec();
      if (spec.isDefined()) {
        spec = Option.apply(PartitioningUtils.normalizePartitionSpec(spec.get(),
            table.partitionSchema(), table.identifier().quotedString(),
            session.sessionState().conf().resolver()));
      }
      return ScalaInterop.list(catalog.listPartitions(table.identifier(), spec));
    } catch (Exception e) {
      LOG.debug("sparklock: TRUNCATE of {} runs as planned: {}", cmd.tableName(), e.toString());
      return null;
    }
  }
}
