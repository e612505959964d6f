package io.sparklock.shim.facts;

import io.sparklock.shim.util.ScalaInterop;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.plans.logical.AppendData;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OverwriteByExpression;
import org.apache.spark.sql.catalyst.plans.logical.OverwritePartitionsDynamic;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;

/**
 * The rows a v2 insert writes, as equality constraints on the target's columns
 * ({@link RowConstraints}): a static partition ({@code INSERT [OVERWRITE] t PARTITION (p=1)}) is
 * a constant column of the analysed query; an overwrite also deletes the rows its delete
 * expression selects, so a column is constrained only where both are: the query's constant
 * joins the expression's values, and a query column that is no constant counts only where the
 * table checks the rows written against the expression (Delta's {@code REPLACE WHERE}, unless
 * its constraint check is off).
 */
final class V2Constraints {
  private V2Constraints() {}

  private static final String DELTA_TABLE = "org.apache.spark.sql.delta.catalog.DeltaTableV2";

  static Map<String, List<String>> append(AppendData a) {
    return constants(a.query(), ScalaInterop.list(((LogicalPlan) a.table()).output()));
  }

  /** A dynamic overwrite replaces the partitions its rows fall in: those its constants pin. */
  static Map<String, List<String>> dynamic(OverwritePartitionsDynamic o) {
    return constants(o.query(), ScalaInterop.list(((LogicalPlan) o.table()).output()));
  }

  static Map<String, List<String>> overwrite(SparkSession session, OverwriteByExpression o) {
    List<Attribute> output = ScalaInterop.list(((LogicalPlan) o.table()).output());
    Map<String, List<String>> deleted =
        RowConstraints.of(o.deleteExpr(), RowConstraints.byId(output));
    Map<String, List<String>> written = constants(o.query(), output);
    boolean checked = o.table() instanceof DataSourceV2Relation r
        && r.table().getClass().getName().equals(DELTA_TABLE)
        && !"false".equalsIgnoreCase(session.conf().get(DeltaConstraints.CONSTRAINT_CHECK, "true"));
    Map<String, List<String>> out = new LinkedHashMap<>();
    deleted.forEach((col, values) -> {
      List<String> added = written.get(col);
      if (added != null) {
        Set<String> both = new LinkedHashSet<>(values);
        both.addAll(added);
        out.put(col, new ArrayList<>(both));
      } else if (checked) {
        out.put(col, values);
      }
    });
    return out;
  }

  /**
   * The columns every row of the query holds a constant in: its top projection's foldable items,
   * through the projections Spark stacks for a static partition and by-name resolution, and the
   * values of a VALUES list (each distinct value of the column, when every row has one).
   */
  private static Map<String, List<String>> constants(LogicalPlan query, List<Attribute> output) {
    Map<String, List<String>> out = new LinkedHashMap<>();
    List<Attribute> written = ScalaInterop.list(query.output());
    if (written.size() != output.size()) {
      return out;
    }
    for (int i = 0; i < written.size(); i++) {
      Attribute col = output.get(i);
      Set<String> values = new LinkedHashSet<>();
      if (values(query, written.get(i), col, values, 0)) {
        out.put(col.name().toLowerCase(Locale.ROOT), new ArrayList<>(values));
      }
    }
    return out;
  }

  /** Whether {@code a} of {@code plan} is a constant in every row; its texts into {@code out}. */
  private static boolean values(
      LogicalPlan plan, Attribute a, Attribute col, Set<String> out, int depth) {
    if (depth > 16) {
      return false;
    }
    if (plan instanceof Project p) {
      for (NamedExpression item : ScalaInterop.list(p.projectList())) {
        if (!item.exprId().equals(a.exprId())) {
          continue;
        }
        Expression e = RowConstraints.unalias((Expression) item);
        if (e instanceof Cast c && c.child().dataType().sameType(c.dataType())) {
          e = c.child(); // Spark 3.5 casts a column to its own type
        }
        if (e instanceof Attribute inner) {
          return values(p.child(), inner, col, out, depth + 1);
        }
        String text = RowConstraints.text(e, col.dataType());
        if (text == null) {
          return false;
        }
        out.add(text);
        return true;
      }
      return false;
    }
    if (plan instanceof LocalRelation l) {
      int index = ScalaInterop.list(l.output()).indexOf(a);
      List<InternalRow> rows = ScalaInterop.list(l.data());
      if (index < 0 || rows.isEmpty()) {
        return false;
      }
      for (InternalRow row : rows) {
        Literal v = new Literal(row.get(index, a.dataType()), a.dataType());
        String text = RowConstraints.text(v, col.dataType());
        if (text == null) {
          return false;
        }
        out.add(text);
      }
      return true;
    }
    return false;
  }
}
