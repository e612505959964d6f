import java.util.Collections;
import java.util.Iterator;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A v2 catalog with two stored procedures, for tests of {@code CALL}: {@code
 * CALL <catalog>.sys.touch(table => 'db.t')} names a table the way Iceberg's and Delta's
 * maintenance procedures do, and records the calls it received ({@link #CALLS}); {@code
 * CALL <catalog>.sys.row_count(table => 'db.t')} runs a query of its own on that table (as
 * Iceberg's procedures run Spark jobs) and returns one row: the table and its row count.
 */
public final class ProcedureCatalog
    implements org.apache.spark.sql.connector.catalog.ProcedureCatalog {
  /** How many times {@code touch} ran in this JVM. */
  public static final java.util.concurrent.atomic.AtomicInteger CALLS =
      new java.util.concurrent.atomic.AtomicInteger();

  private String name;

  @Override
  public void initialize(String name, org.apache.spark.sql.util.CaseInsensitiveStringMap opts) {
    this.name = name;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public UnboundProcedure loadProcedure(Identifier ident) {
    switch (ident.name()) {
      case "touch":
        return new Touch();
      case "row_count":
        return new RowCount();
      default:
        throw new IllegalArgumentException("no procedure " + ident);
    }
  }

  // ProcedureCatalog's since Spark 4.1 (no @Override: this source compiles on 4.0 too)
  public Identifier[] listProcedures(String[] namespace) {
    String[] sys = {"sys"};
    return new Identifier[] {Identifier.of(sys, "touch"), Identifier.of(sys, "row_count")};
  }

  /**
   * A procedure of one argument, {@code table STRING}, bound as it is: what touch and row_count
   * share (they differ in their name, their determinism and what a call does).
   */
  private abstract static class TableProcedure implements UnboundProcedure, BoundProcedure {
    private final String name;
    private final boolean deterministic;

    TableProcedure(String name, boolean deterministic) {
      this.name = name;
      this.deterministic = deterministic;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public BoundProcedure bind(StructType inputType) {
      return this;
    }

    @Override
    public ProcedureParameter[] parameters() {
      return new ProcedureParameter[] {ProcedureParameter.in("table", DataTypes.StringType).build()};
    }

    @Override
    public boolean isDeterministic() {
      return deterministic;
    }
  }

  /** touch(table STRING): does nothing to the table but count the call. */
  private static final class Touch extends TableProcedure {
    Touch() {
      super("touch", true);
    }

    @Override
    public Iterator<Scan> call(InternalRow input) {
      CALLS.incrementAndGet();
      return Collections.emptyIterator();
    }
  }

  /** row_count(table STRING): counts the table's rows with a query of its own. */
  private static final class RowCount extends TableProcedure {
    private static final StructType RESULT = new StructType()
        .add("table_name", DataTypes.StringType)
        .add("row_count", DataTypes.LongType);

    RowCount() {
      super("row_count", false);
    }

    @Override
    public Iterator<Scan> call(InternalRow input) {
      String table = input.getUTF8String(0).toString();
      long count = SparkSession.active().table(table).count();
      InternalRow row = new GenericInternalRow(new Object[] {UTF8String.fromString(table), count});
      LocalScan result = new LocalScan() {
        @Override
        public InternalRow[] rows() {
          return new InternalRow[] {row};
        }

        @Override
        public StructType readSchema() {
          return RESULT;
        }
      };
      return Collections.<Scan>singletonList(result).iterator();
    }
  }
}
