package io.sparklock.shim.facts;

import io.sparklock.shim.util.ScalaInterop;
import io.sparklock.shim.wire.Facts.ConstraintsField;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.connector.write.RowLevelOperation;
import org.apache.spark.sql.connector.write.RowLevelOperationTable;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;

/**
 * The rows a v2 row-level write (DELETE, UPDATE, MERGE as Spark rewrites them for a table that
 * supports row-level operations: {@code ReplaceData}, {@code WriteDelta}) deletes and writes,
 * as equality constraints on its target's pinnable partition columns: the field
 * {@value DeltaConstraints#FIELD}, read by the same command-table targets as Delta's.
 *
 * <p>The rows it replaces or deletes satisfy its condition (for a MERGE, the target's conjuncts
 * of its join and the filters on the target's side); a copy-on-write rewrite also copies the
 * other rows of the files it replaces, which lie in the same identity partitions (hence only
 * columns every partition spec of the table partitions by identity: {@link
 * IcebergTables#pinnableColumns}). A column counts only where every row written keeps the
 * target's value or writes one of the pinned constants ({@link WrittenColumns}): an UPDATE of
 * the column, a MERGE inserting the source's rows, pins nothing there. A MERGE with a WHEN NOT
 * MATCHED BY SOURCE clause changes rows outside its condition: nothing pinned. A merge-on-read
 * write whose rows carry no value of a column (a DELETE's: row ids only) writes none there.
 */
final class RowLevelConstraints {
  private RowLevelConstraints() {}

  /** The field for {@code root}, or null when it is no row-level write that pins its rows. */
  static ConstraintsField of(LogicalPlan root) {
    String name = root.getClass().getSimpleName();
    if (!name.equals("ReplaceData") && !name.equals("WriteDelta")) {
      return null;
    }
    try {
      return field(root);
    } catch (RuntimeException e) {
      return null; // unreadable: no constraint, the whole table is locked
    }
  }

  private static ConstraintsField field(LogicalPlan root) {
    Object table = Refs.invoke(root, "table");
    Object query = Refs.invoke(root, "query");
    if (!(table instanceof DataSourceV2Relation r) || !(query instanceof LogicalPlan q)) {
      return null;
    }
    List<String> columns = IcebergTables.pinnableColumns(r.table());
    if (columns.isEmpty()) {
      return null;
    }
    List<Attribute> output = new ArrayList<>(ScalaInterop.list(r.output()));
    List<Expression> conditions = new ArrayList<>();
    conditions.add((Expression) Refs.invoke(root, "condition"));
    boolean isMerge = r.table() instanceof RowLevelOperationTable t
        && t.operation().command() == RowLevelOperation.Command.MERGE;
    if (!mergeConditions(q, isMerge, output, conditions)) {
      return null;
    }
    Expression all = null;
    for (Expression c : conditions) {
      all = c == null ? all : all == null ? c : new And(all, c);
    }
    Map<String, List<String>> rows = RowConstraints.of(all, RowConstraints.byId(output));
    boolean delta = root.getClass().getSimpleName().equals("WriteDelta");
    rows.entrySet().removeIf(e -> {
      Attribute own = column(output, e.getKey());
      return own == null
          || columns.stream().noneMatch(c -> c.equalsIgnoreCase(e.getKey()))
          || !(WrittenColumns.keeps(q, own.name(), own, e.getValue())
              || delta && column(ScalaInterop.list(q.output()), e.getKey()) == null);
    });
    return rows.isEmpty() ? null : new ConstraintsField(DeltaConstraints.FIELD, columns, rows);
  }

  /**
   * A MERGE's conditions on the target's rows (its join's, the filters on the target's side)
   * into {@code out}; false when it has a NOT MATCHED BY SOURCE clause.
   */
  private static boolean mergeConditions(
      LogicalPlan query, boolean isMerge, List<Attribute> target, List<Expression> out) {
    LogicalPlan merge = find(query);
    if (merge == null) {
      return !isMerge; // a MERGE in a shape not known here: nothing pinned
    }
    Object bySource = Refs.invoke(merge, "notMatchedBySourceInstructions");
    if (!(bySource instanceof scala.collection.Iterable<?> it)) {
      return false;
    }
    for (Object instruction : ScalaInterop.anyList(it)) {
      if (!isCopy(merge, instruction)) {
        return false;
      }
    }
    LogicalPlan p = merge.children().head();
    while (p != null && !(p instanceof Join) && p.children().size() == 1) {
      p = p.children().head();
    }
    if (!(p instanceof Join j)) {
      return true;
    }
    out.add(ScalaInterop.orNull(j.condition()));
    for (LogicalPlan side : List.of(j.left(), j.right())) {
      if (reads(side, target)) {
        for (LogicalPlan s = side; s != null; s = s.children().size() == 1
            ? s.children().head() : null) {
          if (s instanceof Filter f) {
            out.add(f.condition());
          }
        }
      }
    }
    return true;
  }

  /**
   * Whether a NOT MATCHED BY SOURCE instruction only copies the target's row as it is: the
   * carry-over Spark adds to a copy-on-write MERGE (the other rows of the files it replaces),
   * not a clause of the statement.
   */
  private static boolean isCopy(LogicalPlan merge, Object instruction) {
    if (!(Refs.invoke(instruction, "condition") instanceof Literal l)
        || !Boolean.TRUE.equals(l.value())
        || !(Refs.invoke(instruction, "output") instanceof scala.collection.Iterable<?> values)) {
      return false;
    }
    List<Object> row = ScalaInterop.anyList(values);
    List<Attribute> names = ScalaInterop.list(merge.output());
    if (row.size() != names.size()) {
      return false;
    }
    // Spark 4 writes the row's operation first; Spark 3.5's copy-on-write rows have none
    int first = !names.isEmpty() && names.get(0).name().equals("__row_operation") ? 1 : 0;
    for (int i = first; i < row.size(); i++) {
      if (!(row.get(i) instanceof Attribute a) || !a.name().equalsIgnoreCase(names.get(i).name())) {
        return false;
      }
    }
    return true;
  }

  private static LogicalPlan find(LogicalPlan p) {
    for (LogicalPlan x = p; x != null; x = x.children().size() == 1 ? x.children().head() : null) {
      if (x.getClass().getSimpleName().equals("MergeRows")) {
        return x;
      }
    }
    return null;
  }

  private static boolean reads(LogicalPlan side, List<Attribute> target) {
    return target.stream().anyMatch(a -> side.outputSet().contains(a));
  }

  private static Attribute column(List<? extends Attribute> output, String lowered) {
    return output.stream()
        .filter(a -> a.name().toLowerCase(Locale.ROOT).equals(lowered))
        .map(a -> (Attribute) a)
        .findFirst()
        .orElse(null);
  }
}
