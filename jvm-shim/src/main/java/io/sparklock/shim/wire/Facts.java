package io.sparklock.shim.wire;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonUnwrapped;
import java.util.List;
import java.util.Map;

/**
 * The facts of one statement: the contract of {@code acquire}/{@code explain} (BRIDGE.md), typed
 * once. Jackson writes these records as the facts JSON; {@code sparklock/facts.py} holds the same
 * shapes as frozen dataclasses (a Spark test round-trips one through the other). Facts only, no
 * policy: which mode goes on which object is Python's decision.
 *
 * <p>Partition specs are {@code Map<String, String>} (column → value, in the table's column
 * order; a null value is Hive's default partition).
 */
public record Facts(
    String session,
    String executionId,
    String rootExecutionId,
    String sql,
    Map<String, String> conf,
    String currentDatabase,
    String command,
    String commandClass,
    List<ObjectRef> reads,
    List<WriteRef> writes,
    List<FieldRef> fields,
    List<String> enclosingHandles,
    String jobGroup,
    List<String> jobTags,
    String user,
    String clientAddress,
    String agent) {

  /**
   * These facts with what the action's thread tells: its job group and tags (what a cancel
   * matches) and who runs it (the server session's user and client address, and the server
   * session or Spark application it runs for; BRIDGE.md).
   */
  public Facts withCaller(String group, List<String> tags, Caller caller) {
    return new Facts(session, executionId, rootExecutionId, sql, conf, currentDatabase, command,
        commandClass, reads, writes, fields, enclosingHandles, group, tags, caller.user(),
        caller.client(), caller.agent());
  }

  /** Whether the facts name nothing at all (no reads, writes or fields): nothing to lock. */
  public boolean namesNothing() {
    return reads.isEmpty() && writes.isEmpty() && fields.isEmpty();
  }

  // ---------------------------------------------------------------- objects read or written

  /** A relation read or written: a catalog table, a path, or a connector table. */
  public interface ObjectRef {
    @JsonProperty("kind")
    String kind();
  }

  /** A table or view of a catalog; {@code partitions} null = unknown/unpruned (see BRIDGE.md). */
  public record TableRef(
      String catalog,
      String database,
      String table,
      List<String> partitionColumns,
      List<Map<String, String>> partitions,
      @JsonProperty("isView") boolean isView,
      @JsonProperty("isTemp") boolean isTemp,
      String provider,
      String location)
      implements ObjectRef {
    @Override
    public String kind() {
      return "table";
    }

    public TableRef withPartitions(List<Map<String, String>> read) {
      return new TableRef(catalog, database, table, partitionColumns, read, isView, isTemp,
          provider, location);
    }

    public TableRef asView() {
      return new TableRef(catalog, database, table, partitionColumns, partitions, true, isTemp,
          provider, location);
    }
  }

  /** A file path with no catalog table, and the session-catalog table owning it (or null). */
  public record PathRef(String path, OwnerTable ownerTable) implements ObjectRef {
    @Override
    public String kind() {
      return "path";
    }
  }

  /**
   * A table no catalog or path names: a v2 table (noop, console), nothing to lock ({@code target}
   * null), or a JDBC table read by {@code dbtable} ({@code target} as in {@link ConnectorField}).
   */
  public record ConnectorRef(String name, String target) implements ObjectRef {
    @Override
    public String kind() {
      return "connector";
    }
  }

  /** The table whose location is a path or contains it; {@code partition} from its dirs. */
  public record OwnerTable(
      String catalog,
      String database,
      String table,
      List<String> partitionColumns,
      Map<String, String> partition) {}

  /**
   * A write: its target's fields plus how it writes. {@code partitionColumns} is set only for a
   * path target (the write's own partitioning; a table target carries the table's).
   * {@code rowConstraints}: equality constraints every row it deletes or adds satisfies (column
   * -> values, {@link RowConstraints}), for the writes whose static partition is no plan field
   * (v2 inserts, {@code REPLACE WHERE}); empty when none is known.
   */
  public record WriteRef(
      @JsonUnwrapped ObjectRef target,
      @JsonInclude(JsonInclude.Include.NON_NULL) List<String> partitionColumns,
      Map<String, String> staticPartition,
      List<String> dynamicColumns,
      boolean overwrite,
      boolean dynamicPartitionOverwrite,
      boolean fileBased,
      Map<String, List<String>> rowConstraints) {}

  // ---------------------------------------------------------------- root command fields

  /** One table-valued field of the root command, by its case-class field name. */
  public interface FieldRef {
    @JsonProperty("name")
    String name();

    @JsonProperty("kind")
    String kind();
  }

  /** A field naming a table or view; {@code exists} null when the catalog was not asked. */
  public record TableField(
      String name,
      String catalog,
      String database,
      String table,
      Boolean exists,
      List<String> partitionColumns,
      @JsonProperty("isView") boolean isView,
      @JsonProperty("isTemp") boolean isTemp)
      implements FieldRef {
    @Override
    public String kind() {
      return "table";
    }

    public TableField asView() {
      return new TableField(name, catalog, database, table, exists, partitionColumns, true, isTemp);
    }
  }

  /** A field naming a path (a Hadoop Path, a file index root, a Delta log's data path). */
  public record PathField(String name, String path, OwnerTable ownerTable) implements FieldRef {
    public static PathField of(String name, PathRef ref) {
      return new PathField(name, ref.path(), ref.ownerTable());
    }

    @Override
    public String kind() {
      return "path";
    }
  }

  /**
   * A field naming a table of an external system no catalog or path names: a JDBC table written
   * through a data source's options ({@code url} + {@code dbtable}). {@code target} identifies it
   * without credentials ({@code jdbc:derby:memory:db/app.t}: the URL's user, password and
   * properties are left out).
   */
  public record ConnectorField(String name, String target) implements FieldRef {
    @Override
    public String kind() {
      return "connector";
    }
  }

  /** A field naming a database (namespace). */
  public record DatabaseField(String name, String catalog, String database) implements FieldRef {
    @Override
    public String kind() {
      return "database";
    }
  }

  /** Every partition spec one field holds (a Seq of specs is one field). */
  public record PartitionSpecsField(String name, List<Map<String, String>> specs)
      implements FieldRef {
    @Override
    public String kind() {
      return "partitionSpecs";
    }
  }

  /**
   * The rows a command writes, as equality constraints (column -> values, Hive partition-value
   * text; {@link RowConstraints}), with its target's partition columns.
   */
  public record ConstraintsField(
      String name, List<String> partitionColumns, Map<String, List<String>> values)
      implements FieldRef {
    @Override
    public String kind() {
      return "constraints";
    }
  }

  /** A scalar field (a view type, a flag), as its toString. */
  public record ValueField(String name, String value) implements FieldRef {
    @Override
    public String kind() {
      return "value";
    }
  }
}
