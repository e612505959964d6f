package io.sparklock.shim.facts;

import io.sparklock.shim.util.ScalaInterop;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.CaseWhen;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.If;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.Expand;
import org.apache.spark.sql.catalyst.plans.logical.LeafNode;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;

/**
 * Whether a row-level write (Spark's {@code ReplaceData}, {@code WriteDelta}) writes a column
 * only as the target row already had it, or as one of a few constants: every value that can
 * reach the column in the rows it writes is traced back through projections, {@code IF}/{@code
 * CASE} branches, {@code Expand} projections and {@code MergeRows} instructions to the target's
 * own column or a constant. Rows only marking a delete (their operation is Spark's DELETE) write
 * no value. Anything else (a source column, a computed value, a node not known here) answers
 * no: the column may take any value, so the write pins nothing on it.
 */
final class WrittenColumns {
  /** Spark's RowDeltaUtils.DELETE_OPERATION: a row that only deletes, its values unused. */
  private static final int DELETE_OPERATION = 1;
  private static final String OPERATION_COLUMN = "__row_operation";
  private static final int MAX_DEPTH = 64;
  static final List<String> INSTRUCTIONS =
      List.of("matchedInstructions", "notMatchedInstructions", "notMatchedBySourceInstructions");

  private final ExprId own;
  private final List<String> allowed;

  private WrittenColumns(ExprId own, List<String> allowed) {
    this.own = own;
    this.allowed = allowed;
  }

  /**
   * Whether every row of {@code query} carries in its column {@code name} the target column
   * {@code own} unchanged or one of {@code allowed} (as partition-value text).
   */
  static boolean keeps(LogicalPlan query, String name, Attribute own, List<String> allowed) {
    for (Attribute a : ScalaInterop.list(query.output())) {
      if (a.name().equalsIgnoreCase(name)) {
        return new WrittenColumns(own.exprId(), allowed).attribute(query, a, 0);
      }
    }
    return false;
  }

  private boolean attribute(LogicalPlan plan, Attribute a, int depth) {
    if (depth > MAX_DEPTH) {
      return false;
    }
    if (a.exprId().equals(own)) {
      return true;
    }
    int index = indexOf(plan.output(), a);
    if (index < 0) {
      return false;
    }
    if (plan instanceof Project p) {
      NamedExpression item = ScalaInterop.list(p.projectList()).get(index);
      return expression(p.child(), (Expression) item, depth);
    }
    if (plan instanceof Expand e) {
      for (scala.collection.Seq<Expression> row : ScalaInterop.list(e.projections())) {
        if (!rowKeeps(e.child(), ScalaInterop.list(row), plan, index, depth)) {
          return false;
        }
      }
      return true;
    }
    if (plan.getClass().getSimpleName().equals("MergeRows")) {
      return mergeRows(plan, index, depth);
    }
    if (plan instanceof LeafNode) {
      return false; // a relation other than the target's own column
    }
    for (LogicalPlan child : ScalaInterop.list(plan.children())) {
      if (indexOf(child.output(), a) >= 0) {
        return attribute(child, a, depth + 1); // a filter, sort, join, repartition: as is
      }
    }
    return false;
  }

  /** One output row of an Expand or MergeRows instruction: a delete marker writes nothing. */
  private boolean rowKeeps(
      LogicalPlan child, List<Expression> row, LogicalPlan node, int index, int depth) {
    if (!row.isEmpty() && isDeleteMarker(node, row.get(0))) {
      return true;
    }
    return index < row.size() && expression(child, row.get(index), depth);
  }

  private static boolean isDeleteMarker(LogicalPlan node, Expression first) {
    List<Attribute> out = ScalaInterop.list(node.output());
    return !out.isEmpty() && out.get(0).name().equals(OPERATION_COLUMN)
        && first instanceof Literal l && Integer.valueOf(DELETE_OPERATION).equals(l.value());
  }

  /** MergeRows: every instruction's output rows (a Discard has none). */
  private boolean mergeRows(LogicalPlan plan, int index, int depth) {
    LogicalPlan child = plan.children().head();
    for (String list : INSTRUCTIONS) {
      if (!(Refs.invoke(plan, list) instanceof scala.collection.Iterable<?> instructions)) {
        return false;
      }
      for (Object instruction : ScalaInterop.anyList(instructions)) {
        if (!(Refs.invoke(instruction, "outputs") instanceof scala.collection.Iterable<?> rows)) {
          return false;
        }
        for (Object row : ScalaInterop.anyList(rows)) {
          List<Expression> values = new java.util.ArrayList<>();
          ScalaInterop.anyList((scala.collection.Iterable<?>) row)
              .forEach(v -> values.add((Expression) v));
          if (!rowKeeps(child, values, plan, index, depth)) {
            return false;
          }
        }
      }
    }
    return true;
  }

  private boolean expression(LogicalPlan child, Expression e, int depth) {
    e = RowConstraints.unalias(e);
    if (e instanceof Cast c && c.child().dataType().sameType(c.dataType())) {
      e = c.child(); // a cast to the column's own type keeps its value
    }
    if (e instanceof If i) {
      return expression(child, i.trueValue(), depth) && expression(child, i.falseValue(), depth);
    }
    if (e instanceof CaseWhen c) {
      if (c.elseValue().isEmpty()) {
        return false; // no ELSE: a NULL
      }
      for (scala.Tuple2<Expression, Expression> branch : ScalaInterop.list(c.branches())) {
        if (!expression(child, branch._2(), depth)) {
          return false;
        }
      }
      return expression(child, c.elseValue().get(), depth);
    }
    if (e instanceof Attribute a) {
      return attribute(child, a, depth + 1);
    }
    if (e.foldable()) {
      String text = RowConstraints.text(e, e.dataType());
      return text != null && allowed.contains(text);
    }
    return false;
  }

  private static int indexOf(scala.collection.Seq<Attribute> output, Attribute a) {
    List<Attribute> out = ScalaInterop.list(output);
    for (int i = 0; i < out.size(); i++) {
      if (out.get(i).exprId().equals(a.exprId())) {
        return i;
      }
    }
    return -1;
  }
}
