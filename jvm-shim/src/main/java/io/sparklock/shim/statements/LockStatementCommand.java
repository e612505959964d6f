package io.sparklock.shim.statements;

import io.sparklock.shim.util.LeafCommandNode;
import io.sparklock.shim.util.RecordColumns;
import io.sparklock.shim.util.ScalaInterop;
import io.sparklock.shim.wire.Messages;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import scala.collection.immutable.Seq;

/**
 * The eager command of one lock statement (built by {@link LockStatementParser}): the statement
 * as written, its result schema and its Catalyst plumbing. Running it is {@link
 * LockStatementRunner}'s job, resolving its object {@link LockTargets}'.
 *
 * <p>The result columns are the components of the records Python answers with
 * ({@link Messages.LockRow} for SHOW LOCKS, {@link Messages.PlannedLock} for EXPLAIN LOCKS, read
 * by {@link RecordColumns}): SHOW LOCKS EXTENDED shows them all, SHOW LOCKS a few. All are
 * strings.
 */
public final class LockStatementCommand extends LeafCommandNode {

  public enum Kind { SHOW_LOCKS, LOCK, UNLOCK, EXPLAIN_LOCKS }

  /** SHOW LOCKS's columns: the components of {@link Messages.LockRow}. */
  static final RecordColumns LOCK_ROW = new RecordColumns(Messages.LockRow.class);
  /** EXPLAIN LOCKS's columns: the locks a statement would take. */
  static final RecordColumns PLANNED_LOCK = new RecordColumns(Messages.PlannedLock.class);

  public static final List<String> BASIC_COLUMNS = LOCK_ROW.select("name", "mode", "state");
  public static final List<String> EXTENDED_COLUMNS = LOCK_ROW.names();
  public static final List<String> EXPLAIN_COLUMNS = PLANNED_LOCK.names();

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
      this.columns = EXPLAIN_COLUMNS;
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

  /** The result columns (SHOW LOCKS / EXPLAIN LOCKS; none for LOCK and UNLOCK). */
  public List<String> columns() {
    return columns;
  }

  /** How the statement is named in errors ("LOCK TABLE", "SHOW LOCKS DATABASE", ...). */
  String operation() {
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

  // -- running ---------------------------------------------------------------------------------

  @Override
  public Seq<Row> run(SparkSession session) {
    try {
      return ScalaInterop.seq(LockStatementRunner.run(this, session));
    } catch (Exception e) {
      throw StatementErrors.sneaky(e);
    }
  }

  private static Seq<Attribute> attributes(List<String> names) {
    List<StructField> fields = new ArrayList<>();
    for (String n : names) {
      fields.add(DataTypes.createStructField(n, DataTypes.StringType, true));
    }
    @SuppressWarnings("unchecked")
    Seq<Attribute> attributes = (Seq<Attribute>) (Object)
        ScalaInterop.immutableSeq(DataTypeUtils.toAttributes(DataTypes.createStructType(fields)));
    return attributes;
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
        return nameParts == null ? ""
            : (database ? "DATABASE " : "") + StatementErrors.quoted(nameParts);
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
      String value = spec.get(i)[1];
      b.append(StatementErrors.quote(spec.get(i)[0])).append('=').append(value == null ? "NULL"
          : "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'");
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
