import java.util.Collections;
import java.util.Iterator;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * A v2 catalog with one stored procedure, for tests of {@code CALL}: {@code
 * CALL <catalog>.sys.touch(table => 'db.t')} names a table the way Iceberg's and Delta's
 * maintenance procedures do, and records the calls it received ({@link #CALLS}).
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
    if (!"touch".equals(ident.name())) {
      throw new IllegalArgumentException("no procedure " + ident);
    }
    return new Touch();
  }

  @Override
  public Identifier[] listProcedures(String[] namespace) {
    return new Identifier[] {Identifier.of(new String[] {"sys"}, "touch")};
  }

  /** touch(table STRING): does nothing to the table but count the call. */
  private static final class Touch implements UnboundProcedure, BoundProcedure {
    @Override
    public String name() {
      return "touch";
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
      return true;
    }

    @Override
    public Iterator<Scan> call(InternalRow input) {
      CALLS.incrementAndGet();
      return Collections.emptyIterator();
    }
  }
}
