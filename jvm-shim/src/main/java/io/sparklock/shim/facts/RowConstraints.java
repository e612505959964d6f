package io.sparklock.shim.facts;

import io.sparklock.shim.util.ScalaInterop;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.In;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Equality constraints a condition puts on a target's columns: for each column that a conjunct
 * of the condition fixes to constants ({@code p = 1}, {@code 1 = p}, {@code p <=> 1},
 * {@code p IN (1, 2)}), the values it may take, as text in Hive's partition-value form. Every row
 * satisfying the condition satisfies these; a column fixed by two conjuncts keeps the values both
 * allow. Anything else (OR, a function of the column, a cast of it, a non-constant value, a
 * type whose text is no partition value here) adds nothing: the result may say less than the
 * condition, never more. Facts only: which columns are partition columns is Python's business.
 */
final class RowConstraints {
  private RowConstraints() {}

  /** A target column: its name and type. */
  record Column(String name, DataType type) {}

  /** The constraints of {@code condition} (null: none) on the columns {@code column} names. */
  static Map<String, List<String>> of(Expression condition, Function<Expression, Column> column) {
    Map<String, Set<String>> found = new LinkedHashMap<>();
    if (condition != null) {
      for (Expression c : conjuncts(condition)) {
        add(found, c, column);
      }
    }
    Map<String, List<String>> out = new LinkedHashMap<>();
    found.forEach((k, v) -> out.put(k, new ArrayList<>(v)));
    return out;
  }

  /** Columns of an analysed target, by the expression ids of its output. */
  static Function<Expression, Column> byId(List<Attribute> output) {
    Map<ExprId, Attribute> ids = new LinkedHashMap<>();
    output.forEach(a -> ids.put(a.exprId(), a));
    return e -> e instanceof AttributeReference a && ids.containsKey(a.exprId())
        ? new Column(a.name(), a.dataType()) : null;
  }

  /** Columns of a parsed (unresolved) condition, by name in the target's schema. */
  static Function<Expression, Column> byName(StructType schema) {
    return e -> {
      if (!(e instanceof UnresolvedAttribute u)) {
        return null;
      }
      List<String> parts = ScalaInterop.list(u.nameParts());
      if (parts.size() != 1) {
        return null;
      }
      for (StructField f : schema.fields()) {
        if (f.name().equalsIgnoreCase(parts.get(0))) {
          return new Column(f.name(), f.dataType());
        }
      }
      return null;
    };
  }

  private static void add(
      Map<String, Set<String>> found, Expression c, Function<Expression, Column> column) {
    Column col = null;
    List<Expression> values = new ArrayList<>();
    if (c instanceof EqualTo || c instanceof EqualNullSafe) {
      Expression l = c.children().apply(0);
      Expression r = c.children().apply(1);
      col = column.apply(l);
      if (col != null) {
        values.add(r);
      } else {
        col = column.apply(r);
        values.add(l);
      }
    } else if (c instanceof In in) {
      col = column.apply(in.value());
      values.addAll(ScalaInterop.list(in.list()));
    }
    if (col == null || values.isEmpty()) {
      return;
    }
    Set<String> texts = new LinkedHashSet<>();
    for (Expression v : values) {
      String text = text(v, col.type());
      if (text == null) {
        return; // a value we cannot name: this conjunct pins nothing
      }
      texts.add(text);
    }
    String key = col.name().toLowerCase(Locale.ROOT);
    Set<String> before = found.get(key);
    if (before != null) {
      before.retainAll(texts);
      if (before.isEmpty()) {
        found.remove(key); // contradictory: it writes nothing, say nothing rather than guess
      }
    } else {
      found.put(key, texts);
    }
  }

  /** A constant's text as a partition value, or null when not a constant of the column's type. */
  static String text(Expression v, DataType columnType) {
    if (!v.resolved() || !v.foldable() || !v.deterministic() || !named(columnType)
        || !v.dataType().sameType(columnType)) {
      return null;
    }
    Object value = v.eval(null);
    return value == null ? null : new Literal(value, columnType).toString();
  }

  /**
   * Types whose literal text is the partition value Hive and Spark show ({@code p=1}); strings
   * only with binary equality (a case-insensitive collation matches other partitions too).
   */
  private static boolean named(DataType t) {
    return t instanceof IntegerType || t instanceof LongType || t instanceof ShortType
        || t instanceof ByteType || DataTypes.StringType.equals(t) || t instanceof DateType
        || t instanceof BooleanType;
  }

  static List<Expression> conjuncts(Expression e) {
    List<Expression> out = new ArrayList<>();
    List<Expression> stack = new ArrayList<>(List.of(e));
    while (!stack.isEmpty()) {
      Expression x = stack.remove(stack.size() - 1);
      if (x instanceof And a) {
        stack.add(a.right());
        stack.add(a.left());
      } else {
        out.add(x);
      }
    }
    return out;
  }

  /** An expression without its top-level aliases. */
  static Expression unalias(Expression e) {
    while (e instanceof Alias a) {
      e = a.child();
    }
    return e;
  }
}
