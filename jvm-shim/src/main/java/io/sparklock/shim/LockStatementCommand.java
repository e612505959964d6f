package io.sparklock.shim;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.QueryContext;
import org.apache.spark.sql.AnalysisException;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.analysis.NoSuchDatabaseException;
import org.apache.spark.sql.catalyst.analysis.NoSuchPartitionException;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.SessionCatalog;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.connector.catalog.CatalogManager;
import org.apache.spark.sql.execution.CommandExecutionMode;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;

import scala.Option;
import scala.collection.immutable.Seq;

/**
 * The eager command of one lock statement (built by {@link LockStatementParser}).
 *
 * <p>At run time it resolves the object through the session catalog (database default = current
 * database; {@code spark_catalog.} accepted; temp views and other catalogs refused), checks it
 * exists (table, database, partition or partition prefix), normalises a partition spec to the
 * table's partition-column order, sends the request to Python ({@code SparkLockBridge.callCommand},
 * see BRIDGE.md "Command requests") and returns Python's rows. EXPLAIN LOCKS analyses its statement
 * without running it and asks Python which locks it would take ({@code callExplain}).
 *
 * <p>All result columns are strings; {@code lock_time} is epoch milliseconds as text.
 */
public final class LockStatementCommand extends LeafCommandNode {

  public enum Kind { SHOW_LOCKS, LOCK, UNLOCK, EXPLAIN_LOCKS }

  public static final List<String> BASIC_COLUMNS = Collections.unmodifiableList(
      Arrays.asList("name", "mode"));
  public static final List<String> EXTENDED_COLUMNS = Collections.unmodifiableList(
      Arrays.asList(
          "name", "mode", "query_id", "lock_time", "lock_type", "query_string", "client"));

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String SESSION_CATALOG = CatalogManager.SESSION_CATALOG_NAME();

  private final Kind kind;
  /** Table or database name parts as written; null for SHOW LOCKS of everything. */
  private final List<String> nameParts;
  private final boolean database;
  /** (column, value) pairs as written; null when there is no PARTITION clause. */
  private final List<String[]> spec;
  private final String mode;
  private final boolean extended;
  /** LOCK/UNLOCK: the statement text; EXPLAIN LOCKS: the explained statement's text. */
  private final String sqlText;
  /** EXPLAIN LOCKS: the parsed statement (deliberately not a child: it is never run). */
  private final LogicalPlan explained;
  private final List<String> columns;
  private final Seq<Attribute> output;

  private LockStatementCommand(Kind kind, List<String> nameParts, boolean database,
      List<String[]> spec, String mode, boolean extended, String sqlText, LogicalPlan explained,
      Seq<Attribute> output) {
    super();
    this.kind = kind;
    this.nameParts =
        nameParts == null ? null : Collections.unmodifiableList(new ArrayList<>(nameParts));
    this.database = database;
    this.spec = spec == null ? null : Collections.unmodifiableList(new ArrayList<>(spec));
    this.mode = mode;
    this.extended = extended;
    this.sqlText = sqlText;
    this.explained = explained;
    if (kind == Kind.SHOW_LOCKS) {
      this.columns = extended ? EXTENDED_COLUMNS : BASIC_COLUMNS;
    } else if (kind == Kind.EXPLAIN_LOCKS) {
      this.columns = BASIC_COLUMNS;
    } else {
      this.columns = Collections.emptyList();
    }
    this.output = output != null ? output : attributes(this.columns);
  }

  static LockStatementCommand showLocks(List<String> name, boolean database, List<String[]> spec,
      boolean extended) {
    return new LockStatementCommand(Kind.SHOW_LOCKS, name, database, spec, null, extended, null,
        null, null);
  }

  static LockStatementCommand lock(List<String> name, boolean database, List<String[]> spec,
      String mode, String sqlText) {
    return new LockStatementCommand(Kind.LOCK, name, database, spec, mode, false, sqlText, null,
        null);
  }

  static LockStatementCommand unlock(List<String> name, boolean database, List<String[]> spec,
      String sqlText) {
    return new LockStatementCommand(Kind.UNLOCK, name, database, spec, null, false, sqlText, null,
        null);
  }

  static LockStatementCommand explainLocks(LogicalPlan explained, String sqlText) {
    return new LockStatementCommand(Kind.EXPLAIN_LOCKS, null, false, null, null, false, sqlText,
        explained, null);
  }

  // -- accessors (tests, the rest of the shim) -----------------------------------------------

  public Kind kind() {
    return kind;
  }

  public List<String> nameParts() {
    return nameParts;
  }

  public boolean isDatabase() {
    return database;
  }

  public List<String[]> partitionSpec() {
    return spec;
  }

  public String lockMode() {
    return mode;
  }

  public boolean isExtended() {
    return extended;
  }

  public String sqlText() {
    return sqlText;
  }

  public LogicalPlan explainedPlan() {
    return explained;
  }

  // -- running ---------------------------------------------------------------------------------

  @Override
  public Seq<Row> run(SparkSession session) {
    try {
      return ScalaInterop.seq(runStatement(session));
    } catch (Exception e) {
      throw sneaky(e);
    }
  }

  private List<Row> runStatement(SparkSession session) throws Exception {
    List<Row> rows;
    switch (kind) {
      case SHOW_LOCKS: {
        ObjectNode request = request(session, "SHOW_LOCKS");
        request.put("extended", extended);
        request.set("object", nameParts == null ? JSON.nullNode() : resolveObject(session));
        rows = rowsOf(command(session, request), "rows");
        break;
      }
      case LOCK: {
        ObjectNode request = request(session, "LOCK");
        request.put("mode", mode);
        request.put("sql", sqlText);
        request.set("object", resolveObject(session));
        putCancelScope(ClassicSession.of(session).sparkContext(), request);
        command(session, request);
        rows = Collections.emptyList();
        break;
      }
      case UNLOCK: {
        ObjectNode request = request(session, "UNLOCK");
        request.set("object", resolveObject(session));
        command(session, request);
        rows = Collections.emptyList();
        break;
      }
      case EXPLAIN_LOCKS:
        rows = explainLocks(session);
        break;
      default:
        throw new IllegalStateException(String.valueOf(kind));
    }
    return rows;
  }

  private List<Row> explainLocks(SparkSession session) {
    QueryExecution qe = session.sessionState().executePlan(explained, CommandExecutionMode.SKIP());
    LogicalPlan analyzed = qe.analyzed();
    LogicalPlan optimized = qe.optimizedPlan();
    String facts = FactsExtractor.factsJson(ClassicSession.of(session), analyzed, optimized, null, null,
        sqlText);
    String answer;
    try {
      answer = SparkLockBridge.callExplain(facts);
    } catch (Exception e) {
      if (disabledWithoutPython(session, e)) {
        return Collections.emptyList();
      }
      throw sneaky(e);
    }
    return rowsOf(parse(answer), "rows");
  }

  /** A LOCK TABLE wait ends on a cancellation of its thread's job group or tags (BRIDGE.md). */
  private static void putCancelScope(org.apache.spark.SparkContext sc, ObjectNode request) {
    request.put("jobGroup", sc.getLocalProperty("spark.jobGroup.id"));
    List<String> tags = new ArrayList<>();
    for (scala.collection.Iterator<String> it = sc.getJobTags().iterator(); it.hasNext(); ) {
      tags.add(it.next());
    }
    tags.sort(null);
    ArrayNode array = request.putArray("jobTags");
    tags.forEach(array::add);
  }

  private ObjectNode request(SparkSession session, String statement) {
    ObjectNode request = JSON.createObjectNode();
    request.put("statement", statement);
    request.put("session", ClassicSession.of(session).sessionUUID());
    JsonNode conf;
    try {
      conf = parse(SparkLockBridge.sessionConfJson(ClassicSession.of(session)));
    } catch (Exception e) {
      throw sneaky(e);
    }
    request.set("conf", conf);
    return request;
  }

  private JsonNode command(SparkSession session, ObjectNode request) {
    String answer;
    try {
      answer = SparkLockBridge.callCommand(request.toString());
    } catch (Exception e) {
      if (disabledWithoutPython(session, e)) {
        return JSON.createObjectNode().put("ok", true);
      }
      throw sneaky(e);
    }
    return parse(answer);
  }

  /**
   * With {@code spark.sparklock.enabled=false} these statements must never fail, even when no
   * Python lock service is attached: they then answer like a disabled service (no rows, no-op).
   */
  private static boolean disabledWithoutPython(SparkSession session, Exception e) {
    return !isEnabled(session)
        && String.valueOf(e.getMessage()).startsWith("SPARKLOCK_NOT_ATTACHED");
  }

  private static boolean isEnabled(SparkSession session) {
    try {
      return SparkLockBridge.enabled(ClassicSession.of(session));
    } catch (Exception e) {
      return true;
    }
  }

  /** Rows in this command's column order, taken by name from Python's {columns, rows}. */
  private List<Row> rowsOf(JsonNode answer, String field) {
    List<Row> rows = new ArrayList<>();
    JsonNode data = answer.get(field);
    if (data == null || !data.isArray()) {
      return rows;
    }
    int[] index = new int[columns.size()];
    JsonNode answerColumns = answer.get("columns");
    for (int c = 0; c < columns.size(); c++) {
      index[c] = c;
      if (answerColumns != null && answerColumns.isArray() && answerColumns.size() > 0) {
        index[c] = -1;
        for (int a = 0; a < answerColumns.size(); a++) {
          if (columns.get(c).equals(answerColumns.get(a).asText())) {
            index[c] = a;
          }
        }
      }
    }
    for (JsonNode row : data) {
      Object[] values = new Object[columns.size()];
      for (int c = 0; c < columns.size(); c++) {
        JsonNode v = index[c] >= 0 && index[c] < row.size() ? row.get(index[c]) : null;
        values[c] = v == null || v.isNull() ? null : v.asText();
      }
      rows.add(RowFactory.create(values));
    }
    return rows;
  }

  // -- resolution through the session catalog -----------------------------------------------

  private String operation() {
    String what = database ? "DATABASE" : "TABLE";
    switch (kind) {
      case LOCK:
        return "LOCK " + what;
      case UNLOCK:
        return "UNLOCK " + what;
      default:
        return database ? "SHOW LOCKS DATABASE" : "SHOW LOCKS";
    }
  }

  private ObjectNode resolveObject(SparkSession session) throws AnalysisException {
    return database ? resolveDatabase(session) : resolveTable(session);
  }

  /** Name parts without an explicit {@code spark_catalog.} prefix; other catalogs refused. */
  private List<String> sessionCatalogParts(SparkSession session) throws AnalysisException {
    List<String> parts = new ArrayList<>(nameParts);
    CatalogManager catalogs = session.sessionState().catalogManager();
    if (parts.size() >= 2 && parts.get(0).equalsIgnoreCase(SESSION_CATALOG)) {
      return parts.subList(1, parts.size());
    }
    if (parts.size() >= 2 && isOtherCatalog(session, parts.get(0))) {
      throw unsupportedCatalog(parts.get(0));
    }
    String current = catalogs.currentCatalog().name();
    if (!current.equalsIgnoreCase(SESSION_CATALOG)) {
      throw unsupportedCatalog(current);
    }
    return parts;
  }

  /**
   * Whether {@code name} names a configured catalog ({@code spark.sql.catalog.<name>}), checked
   * on the conf rather than by loading the plugin (a catalog that fails to load is still not
   * ours to lock).
   */
  private static boolean isOtherCatalog(SparkSession session, String name) {
    return session.sessionState().conf().contains("spark.sql.catalog." + name);
  }

  private ObjectNode resolveDatabase(SparkSession session) throws AnalysisException {
    List<String> parts = sessionCatalogParts(session);
    if (parts.size() != 1) {
      throw new AnalysisException("REQUIRES_SINGLE_PART_NAMESPACE", scalaMap(
          LockStatementParser.params("sessionCatalog", SESSION_CATALOG,
              "identifier", quoted(nameParts))));
    }
    SessionCatalog catalog = session.sessionState().catalog();
    String db = parts.get(0);
    if (!catalog.databaseExists(db)) {
      throw new NoSuchDatabaseException(db);
    }
    ObjectNode object = JSON.createObjectNode();
    object.put("database", catalog.getDatabaseMetadata(db).name());
    return object;
  }

  private ObjectNode resolveTable(SparkSession session) throws AnalysisException {
    List<String> parts = sessionCatalogParts(session);
    SessionCatalog catalog = session.sessionState().catalog();
    if (parts.size() > 2) {
      throw new AnalysisException("REQUIRES_SINGLE_PART_NAMESPACE", scalaMap(
          LockStatementParser.params("sessionCatalog", SESSION_CATALOG,
              "identifier", quoted(nameParts))));
    }
    boolean explicitCatalog = parts.size() != nameParts.size();
    if (!explicitCatalog && catalog.isTempView(ScalaInterop.seq(parts))) {
      throw errorOrMessage("EXPECT_TABLE_NOT_VIEW.NO_ALTERNATIVE",
          LockStatementParser.params("operation", operation(), "viewName", quoted(parts)),
          "'" + operation() + "' expects a table. " + quoted(parts) + " is a view");
    }
    TableIdentifier ident = parts.size() == 1
        ? new TableIdentifier(parts.get(0))
        : new TableIdentifier(parts.get(1), Option.apply(parts.get(0)));
    CatalogTable meta = catalog.getTableMetadata(ident); // NoSuchTable / NoSuchDatabase
    String db = meta.identifier().database().isDefined()
        ? meta.identifier().database().get()
        : catalog.getCurrentDatabase();
    String table = meta.identifier().table();
    TableIdentifier qualified = new TableIdentifier(table, Option.apply(db));

    List<String[]> normalized = normalizeSpec(session, meta, db, table);
    if (!normalized.isEmpty()) {
      Map<String, String> specMap = new LinkedHashMap<>();
      for (String[] kv : normalized) {
        specMap.put(kv[0], kv[1]);
      }
      boolean exists;
      try {
        exists = !catalog.listPartitions(qualified, Option.apply(scalaMap(specMap))).isEmpty();
      } catch (Exception e) {
        if (e instanceof NoSuchPartitionException) {
          exists = false;
        } else {
          throw sneaky(e);
        }
      }
      if (!exists) {
        throw new NoSuchPartitionException(db, table, scalaMap(specMap));
      }
    }

    ObjectNode object = JSON.createObjectNode();
    object.put("database", db);
    object.put("table", table);
    ArrayNode partition = object.putArray("partition");
    for (String[] kv : normalized) {
      ArrayNode pair = partition.addArray();
      pair.add(kv[0]);
      if (kv[1] == null) {
        pair.addNull();
      } else {
        pair.add(kv[1]);
      }
    }
    return object;
  }

  /**
   * The spec as (partition column, value) pairs in the table's partition-column order. Every
   * column must be a partition column; together they must be a leading prefix of the partition
   * columns (a partition, or a partition prefix such as {@code p=1} of {@code (p, q)}).
   */
  private List<String[]> normalizeSpec(SparkSession session, CatalogTable meta, String db,
      String table) throws AnalysisException {
    List<String[]> out = new ArrayList<>();
    if (spec == null) {
      return out;
    }
    List<String> partitionColumns = ScalaInterop.list(meta.partitionColumnNames());
    boolean caseSensitive = session.sessionState().conf().caseSensitiveAnalysis();
    String tableName = quoted(Arrays.asList(SESSION_CATALOG, db, table));
    Map<String, String> byColumn = new LinkedHashMap<>();
    for (String[] kv : spec) {
      String column = null;
      for (String c : partitionColumns) {
        if (caseSensitive ? c.equals(kv[0]) : c.equalsIgnoreCase(kv[0])) {
          column = c;
        }
      }
      if (column == null) {
        String detail = partitionColumns.isEmpty()
            ? "table " + tableName + " is not partitioned"
            : "the partition columns of table " + tableName + " are "
                + quoted(partitionColumns, ", ");
        throw new AnalysisException("NON_PARTITION_COLUMN", scalaMap(LockStatementParser.params(
            "columnName", quote(kv[0]) + " (" + detail + ")")));
      }
      if (byColumn.containsKey(column)) {
        throw analysisError("PARTITION clause of " + operation() + " names partition column "
            + quote(column) + " of table " + tableName + " more than once");
      }
      byColumn.put(column, kv[1]);
    }
    for (int i = 0; i < partitionColumns.size() && out.size() < byColumn.size(); i++) {
      String c = partitionColumns.get(i);
      if (!byColumn.containsKey(c)) {
        throw analysisError("PARTITION clause of " + operation() + " on table " + tableName
            + " must give the leading partition columns (" + quoted(partitionColumns, ", ")
            + ") in order, but " + quote(c) + " is missing: it names no partition or partition"
            + " prefix");
      }
      out.add(new String[] {c, byColumn.get(c)});
    }
    return out;
  }

  private AnalysisException unsupportedCatalog(String catalogName) {
    return new AnalysisException("UNSUPPORTED_FEATURE.CATALOG_OPERATION", scalaMap(
        LockStatementParser.params("catalogName", quote(catalogName), "operation",
            operation() + " (sparklock locks objects of the session catalog "
                + SESSION_CATALOG + " only)")));
  }

  /**
   * Spark's error {@code errorClass}, or -- on a Spark whose error classes lack it (Spark 3.5 has
   * no {@code EXPECT_TABLE_NOT_VIEW}) -- the same text as a message naming the class.
   */
  static AnalysisException errorOrMessage(String errorClass, Map<String, String> params,
      String message) {
    try {
      return new AnalysisException(errorClass, scalaMap(params));
    } catch (Exception unknownErrorClass) { // SparkException INTERNAL_ERROR
      return new AnalysisException("[" + errorClass + "] " + message + ".",
          Option.empty(), Option.empty(), Option.empty(), Option.empty(),
          scalaMap(Collections.emptyMap()), new QueryContext[0]);
    }
  }

  /** An AnalysisException with our own complete message (no Spark error class fits). */
  static AnalysisException analysisError(String message) {
    return new AnalysisException("[SPARKLOCK_INVALID_PARTITION_SPEC] " + message + ".",
        Option.empty(), Option.empty(), Option.empty(), Option.empty(),
        scalaMap(Collections.emptyMap()), new QueryContext[0]);
  }

  static String quote(String part) {
    return "`" + part.replace("`", "``") + "`";
  }

  static String quoted(List<String> parts) {
    return quoted(parts, ".");
  }

  static String quoted(List<String> parts, String separator) {
    StringBuilder b = new StringBuilder();
    for (String p : parts) {
      if (b.length() > 0) {
        b.append(separator);
      }
      b.append(quote(p));
    }
    return b.toString();
  }

  // -- helpers ----------------------------------------------------------------------------------

  private static JsonNode parse(String json) {
    try {
      return JSON.readTree(json == null ? "{}" : json);
    } catch (Exception e) {
      throw new IllegalStateException("sparklock: unreadable answer from Python: " + json, e);
    }
  }


  @SuppressWarnings("unchecked")
  private static <E extends Throwable> RuntimeException sneaky(Throwable e) throws E {
    throw (E) e;
  }

  @SuppressWarnings("unchecked")
  static scala.collection.immutable.Map<String, String> scalaMap(Map<String, String> map) {
    scala.collection.immutable.Map<String, String> result =
        (scala.collection.immutable.Map<String, String>) (Object)
            scala.collection.immutable.ListMap$.MODULE$.empty();
    for (Map.Entry<String, String> e : map.entrySet()) {
      result = result.updated(e.getKey(), e.getValue());
    }
    return result;
  }

  @SuppressWarnings("unchecked")
  private static Seq<Attribute> attributes(List<String> names) {
    List<StructField> fields = new ArrayList<>();
    for (String n : names) {
      fields.add(DataTypes.createStructField(n, DataTypes.StringType, true));
    }
    return (Seq<Attribute>) (Object)
        ScalaInterop.immutableSeq(DataTypeUtils.toAttributes(DataTypes.createStructType(fields)));
  }

  // -- Catalyst plumbing (Scala traits seen from Java) ----------------------------------------

  @Override
  public Seq<Attribute> output() {
    return output;
  }

  @Override
  public Seq<LogicalPlan> children() {
    return ScalaInterop.seq(Collections.<LogicalPlan>emptyList());
  }

  @Override
  public LogicalPlan makeCopy(Object[] newArgs) {
    return copy();
  }

  @Override
  public LogicalPlan clone() {
    return copy();
  }

  private LockStatementCommand copy() {
    LockStatementCommand c = new LockStatementCommand(kind, nameParts, database, spec, mode,
        extended, sqlText, explained, output);
    c.copyTagsFrom(this);
    return c;
  }

  @Override
  public String nodeName() {
    switch (kind) {
      case SHOW_LOCKS:
        return "ShowLocks";
      case LOCK:
        return "LockStatement";
      case UNLOCK:
        return "UnlockStatement";
      default:
        return "ExplainLocks";
    }
  }

  @Override
  public int productArity() {
    return 5;
  }

  @Override
  public Object productElement(int n) {
    switch (n) {
      case 0:
        return kind.name();
      case 1:
        return nameParts == null ? "" : (database ? "DATABASE " : "") + quoted(nameParts);
      case 2:
        return specText();
      case 3:
        return kind == Kind.SHOW_LOCKS ? (extended ? "EXTENDED" : "") : (mode == null ? "" : mode);
      case 4:
        return kind == Kind.EXPLAIN_LOCKS ? sqlText : "";
      default:
        throw new IndexOutOfBoundsException(String.valueOf(n));
    }
  }

  private String specText() {
    if (spec == null) {
      return "";
    }
    StringBuilder b = new StringBuilder("PARTITION (");
    for (int i = 0; i < spec.size(); i++) {
      if (i > 0) {
        b.append(", ");
      }
      b.append(quote(spec.get(i)[0])).append('=').append(spec.get(i)[1] == null ? "NULL"
          : "'" + spec.get(i)[1].replace("\\", "\\\\").replace("'", "\\'") + "'");
    }
    return b.append(')').toString();
  }

  @Override
  public boolean canEqual(Object that) {
    return that instanceof LockStatementCommand;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof LockStatementCommand)) {
      return false;
    }
    LockStatementCommand c = (LockStatementCommand) o;
    return kind == c.kind && database == c.database && extended == c.extended
        && Objects.equals(nameParts, c.nameParts) && Objects.equals(specText(), c.specText())
        && Objects.equals(mode, c.mode) && Objects.equals(sqlText, c.sqlText)
        && Objects.equals(explained, c.explained) && Objects.equals(output, c.output);
  }

  @Override
  public int hashCode() {
    return Objects.hash(kind, nameParts, database, specText(), mode, extended, sqlText);
  }
}
