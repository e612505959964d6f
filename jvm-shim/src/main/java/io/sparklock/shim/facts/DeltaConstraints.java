package io.sparklock.shim.facts;

import io.sparklock.shim.facts.RowConstraints.Column;
import io.sparklock.shim.util.ScalaInterop;
import io.sparklock.shim.wire.Facts.ConstraintsField;
import io.sparklock.shim.wire.Facts;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.ResolvedTable;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;

/**
 * The rows a Delta command writes (deletes, rewrites or adds), as equality constraints on its
 * target's columns ({@link RowConstraints}), with the target's partition columns: the field
 * {@value #FIELD} of the facts. Read reflectively (Delta is optional on the classpath), field
 * names as in Delta 3.3 and 4.4. Only what holds for every written row is reported:
 *
 * <ul>
 *   <li>DELETE: its condition;
 *   <li>UPDATE: its condition, less the columns it assigns another value;
 *   <li>MERGE: the conjuncts of its condition on the target only, less the columns a matched
 *       clause assigns; nothing with a NOT MATCHED [BY SOURCE] clause (rows it inserts or
 *       touches lie outside the condition);
 *   <li>OPTIMIZE ... WHERE: its partition predicates (kept as SQL text), parsed by the session's
 *       own parser;
 *   <li>a {@code replaceWhere} overwrite (of a table, of a path: {@code SaveIntoDataSource}
 *       with Delta's source, or {@code saveAsTable}: a v2 {@code ReplaceTableAsSelect} of an
 *       existing Delta table): the option, parsed likewise, unless Delta's check that the data
 *       written matches it is turned off.
 * </ul>
 */
public final class DeltaConstraints {
  private DeltaConstraints() {}

  static final String FIELD = "writtenRows";
  static final String CONSTRAINT_CHECK =
      "spark.databricks.delta.replaceWhere.constraintCheck.enabled";

  private static final String COMMANDS = "org.apache.spark.sql.delta.commands.";
  private static final String SAVE_INTO =
      "org.apache.spark.sql.execution.datasources.SaveIntoDataSourceCommand";
  private static final String DELTA_SOURCE = "org.apache.spark.sql.delta.sources.DeltaDataSource";
  private static final String REPLACE_AS_SELECT =
      "org.apache.spark.sql.catalyst.plans.logical.ReplaceTableAsSelect";

  /** The field for {@code root}, or null when it is no Delta command that pins its rows. */
  static ConstraintsField of(SparkSession session, LogicalPlan root) {
    try {
      return switch (root.getClass().getName()) {
        case COMMANDS + "DeleteCommand" -> byTarget(root, cond(root), false);
        case COMMANDS + "UpdateCommand" -> byTarget(root, cond(root), true);
        case COMMANDS + "MergeIntoCommand" -> merge(root);
        case COMMANDS + "OptimizeTableCommand" -> optimize(session, root);
        case COMMANDS + "WriteIntoDelta" -> replaceWhere(session, root);
        case SAVE_INTO -> savedByPath(session, root);
        case REPLACE_AS_SELECT -> savedAsTable(session, root);
        default -> null;
      };
    } catch (RuntimeException e) {
      return null; // unreadable: no constraint, the whole table is locked
    }
  }

  private static Expression cond(LogicalPlan root) {
    return (Expression) ScalaInterop.unwrapOption(Refs.invoke(root, "condition"));
  }

  private static LogicalPlan target(LogicalPlan root) {
    return (LogicalPlan) Refs.invoke(root, "target");
  }

  /** DELETE and UPDATE: the condition on the target; UPDATE less the columns it changes. */
  private static ConstraintsField byTarget(LogicalPlan root, Expression cond, boolean update) {
    LogicalPlan target = target(root);
    List<Attribute> output = ScalaInterop.list(target.output());
    Map<String, List<String>> rows = RowConstraints.of(cond, RowConstraints.byId(output));
    if (update) {
      List<Object> exprs = ScalaInterop.anyList(
          (scala.collection.Iterable<?>) Refs.invoke(root, "updateExpressions"));
      if (exprs.size() != output.size()) {
        return null;
      }
      for (int i = 0; i < exprs.size(); i++) {
        if (!same(RowConstraints.unalias((Expression) exprs.get(i)), output.get(i))) {
          rows.remove(output.get(i).name().toLowerCase(Locale.ROOT));
        }
      }
    }
    return field(partitionColumns(target), rows);
  }

  private static ConstraintsField merge(LogicalPlan root) {
    if (!empty(Refs.invoke(root, "notMatchedClauses"))
        || !empty(Refs.invoke(root, "notMatchedBySourceClauses"))) {
      return null;
    }
    LogicalPlan target = target(root);
    List<Attribute> output = ScalaInterop.list(target.output());
    Map<String, List<String>> rows = RowConstraints.of(
        (Expression) Refs.invoke(root, "condition"), RowConstraints.byId(output));
    for (Object clause : ScalaInterop.anyList(
        (scala.collection.Iterable<?>) Refs.invoke(root, "matchedClauses"))) {
      for (Object action : ScalaInterop.anyList(
          (scala.collection.Iterable<?>) Refs.invoke(clause, "actions"))) {
        List<Object> parts = ScalaInterop.anyList(
            (scala.collection.Iterable<?>) Refs.invoke(action, "targetColNameParts"));
        if (parts.isEmpty()) {
          return null;
        }
        String col = String.valueOf(parts.get(0));
        Object expr = Refs.invoke(action, "expr");
        Attribute own = output.stream()
            .filter(a -> a.name().equalsIgnoreCase(col)).findFirst().orElse(null);
        if (parts.size() != 1 || own == null
            || !(expr instanceof Expression e && same(RowConstraints.unalias(e), own))) {
          rows.remove(col.toLowerCase(Locale.ROOT));
        }
      }
    }
    return field(partitionColumns(target), rows);
  }

  private static ConstraintsField optimize(SparkSession session, LogicalPlan root) {
    List<Object> predicates = ScalaInterop.anyList(
        (scala.collection.Iterable<?>) Refs.invoke(root, "userPartitionPredicates"));
    Object child = Refs.invoke(root, "child");
    if (predicates.isEmpty() || !(child instanceof ResolvedTable rt)) {
      return null;
    }
    Function<Expression, Column> columns = RowConstraints.byName(rt.table().schema());
    Map<String, List<String>> rows = new java.util.LinkedHashMap<>();
    for (Object p : predicates) {
      Expression e = parse(session, String.valueOf(p));
      RowConstraints.of(e, columns).forEach((k, v) -> rows.merge(k, v, (a, b) -> {
        a.retainAll(b);
        return a;
      }));
    }
    rows.values().removeIf(List::isEmpty);
    return field(Refs.identityColumns(rt.table()), rows);
  }

  private static ConstraintsField replaceWhere(SparkSession session, LogicalPlan root) {
    if (Refs.invoke(root, "mode") != SaveMode.Overwrite || !checked(session)) {
      return null;
    }
    Object options = Refs.invoke(root, "options");
    Object where = options == null ? null
        : ScalaInterop.unwrapOption(Refs.invoke(options, "replaceWhere"));
    Object data = Refs.invoke(root, "data");
    Object log = Refs.invoke(root, "deltaLog");
    if (!(where instanceof String text) || !(data instanceof org.apache.spark.sql.Dataset<?> df)) {
      return null;
    }
    Expression e = parse(session, text);
    Map<String, List<String>> rows = RowConstraints.of(e, RowConstraints.byName(df.schema()));
    return field(deltaLogPartitionColumns(log), rows);
  }

  /** {@code df.write.format("delta").mode("overwrite").option("replaceWhere", ...).save(p)}. */
  private static ConstraintsField savedByPath(SparkSession session, LogicalPlan root) {
    Object source = Refs.invoke(root, "dataSource");
    if (source == null || !source.getClass().getName().equals(DELTA_SOURCE)
        || Refs.invoke(root, "mode") != SaveMode.Overwrite || !checked(session)) {
      return null;
    }
    String where = option(root, "options", "replaceWhere");
    String path = option(root, "options", "path");
    LogicalPlan query = (LogicalPlan) Refs.invoke(root, "query");
    if (where == null || path == null || query == null) {
      return null;
    }
    return replaced(session, where, query, path);
  }

  /**
   * {@code df.write.format("delta").mode("overwrite").option("replaceWhere", ...)
   * .saveAsTable(t)}: Spark plans a v2 replace of {@code t}, which Delta runs as an overwrite of
   * the matching rows of the existing table. A table not there yet (or not Delta's) is created
   * or replaced whole: no constraint.
   */
  private static ConstraintsField savedAsTable(SparkSession session, LogicalPlan root) {
    Object spec = Refs.invoke(root, "tableSpec");
    Object provider =
        spec == null ? null : ScalaInterop.unwrapOption(Refs.invoke(spec, "provider"));
    if (!"delta".equalsIgnoreCase(String.valueOf(provider)) || !checked(session)) {
      return null;
    }
    String where = option(root, "writeOptions", "replaceWhere");
    Object name = Refs.invoke(root, "name");
    LogicalPlan query = (LogicalPlan) Refs.invoke(root, "query");
    if (where == null || query == null
        || !(name instanceof org.apache.spark.sql.catalyst.analysis.ResolvedIdentifier id)) {
      return null;
    }
    String location = existingDeltaLocation(id);
    return location == null ? null : replaced(session, where, query, location);
  }

  /** A replaceWhere overwrite of the Delta table at {@code path} by {@code query}'s rows. */
  private static ConstraintsField replaced(
      SparkSession session, String where, LogicalPlan query, String path) {
    Map<String, List<String>> rows =
        RowConstraints.of(parse(session, where), RowConstraints.byName(query.schema()));
    return field(partitionColumnsAt(session, path), rows);
  }

  /** The write option {@code key} (case-insensitive, as Spark reads options) of a map field. */
  private static String option(LogicalPlan root, String field, String key) {
    for (Map.Entry<?, ?> e : ScalaInterop.map(
        (scala.collection.Map<?, ?>) Refs.invoke(root, field)).entrySet()) {
      if (String.valueOf(e.getKey()).equalsIgnoreCase(key)) {
        return String.valueOf(e.getValue());
      }
    }
    return null;
  }

  /** The location of the existing Delta table {@code id} names, or null. */
  private static String existingDeltaLocation(
      org.apache.spark.sql.catalyst.analysis.ResolvedIdentifier id) {
    org.apache.spark.sql.connector.catalog.Table table;
    try {
      table = ((org.apache.spark.sql.connector.catalog.TableCatalog) id.catalog())
          .loadTable(id.identifier());
    } catch (Exception e) {
      return null; // not there: created whole
    }
    java.util.Map<String, String> props = table.properties();
    if (!"delta".equalsIgnoreCase(props.get("provider"))) {
      return null;
    }
    return props.get("location");
  }

  /** The partition columns of the Delta table at {@code path} (none when unreadable). */
  public static List<String> partitionColumnsAt(SparkSession session, String path) {
    List<String> cols = deltaLogPartitionColumns(deltaLogOf(session, path));
    return cols == null ? List.of() : cols;
  }

  /** Delta's (cached) log of the table at {@code path}. */
  private static Object deltaLogOf(SparkSession session, String path) {
    try {
      return Class.forName("org.apache.spark.sql.delta.DeltaLog", true,
              Thread.currentThread().getContextClassLoader())
          .getMethod("forTable", SparkSession.class, String.class)
          .invoke(null, session, path);
    } catch (ReflectiveOperationException e) {
      return null;
    }
  }

  /** Whether Delta checks that the rows written match {@code replaceWhere} (its default). */
  private static boolean checked(SparkSession session) {
    return !"false".equalsIgnoreCase(session.conf().get(CONSTRAINT_CHECK, "true"));
  }

  /** SQL text as the session's own parser reads an expression (its error: no constraint). */
  private static Expression parse(SparkSession session, String text) {
    try {
      return session.sessionState().sqlParser().parseExpression(text);
    } catch (Exception e) {
      throw new IllegalArgumentException("cannot parse " + text + ": " + e, e);
    }
  }

  private static ConstraintsField field(
      List<String> partitionColumns, Map<String, List<String>> rows) {
    if (partitionColumns == null || partitionColumns.isEmpty() || rows.isEmpty()) {
      return null;
    }
    return new ConstraintsField(FIELD, partitionColumns, rows);
  }

  /** Whether {@code e} is the target's own column {@code a} (an assignment that keeps it). */
  private static boolean same(Expression e, Attribute a) {
    return e instanceof AttributeReference r && r.exprId().equals(a.exprId());
  }

  private static boolean empty(Object seq) {
    return seq instanceof scala.collection.Iterable<?> it && it.isEmpty();
  }

  /** The partition columns of a Delta command's target relation (a Delta file index). */
  private static List<String> partitionColumns(LogicalPlan target) {
    LogicalPlan p = target;
    while (p != null && !(p instanceof LogicalRelation) && p.children().size() == 1) {
      p = p.children().head();
    }
    if (p instanceof LogicalRelation lr && lr.relation() instanceof HadoopFsRelation fs) {
      return List.of(fs.partitionSchema().fieldNames());
    }
    return null;
  }

  /** A DeltaLog's table partition columns (its latest snapshot read, no new listing). */
  private static List<String> deltaLogPartitionColumns(Object log) {
    Object snapshot = log == null ? null : Refs.invoke(log, "unsafeVolatileSnapshot");
    Object metadata = snapshot == null ? null : Refs.invoke(snapshot, "metadata");
    Object cols = metadata == null ? null : Refs.invoke(metadata, "partitionColumns");
    if (!(cols instanceof scala.collection.Iterable<?> it)) {
      return null;
    }
    List<String> out = new ArrayList<>();
    ScalaInterop.anyList(it).forEach(c -> out.add(String.valueOf(c)));
    return out;
  }
}
