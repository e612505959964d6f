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
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.AppendData;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OverwriteByExpression;
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

  /** The columns the query writes one constant into (its top projection's foldable items). */
  private static Map<String, List<String>> constants(LogicalPlan query, List<Attribute> output) {
    Map<String, List<String>> out = new LinkedHashMap<>();
    if (!(query instanceof Project p)) {
      return out;
    }
    List<NamedExpression> items = ScalaInterop.list(p.projectList());
    if (items.size() != output.size()) {
      return out;
    }
    for (int i = 0; i < items.size(); i++) {
      Attribute col = output.get(i);
      String text = RowConstraints.text(RowConstraints.unalias((Expression) items.get(i)), col.dataType());
      if (text != null) {
        out.put(col.name().toLowerCase(Locale.ROOT), List.of(text));
      }
    }
    return out;
  }
}
