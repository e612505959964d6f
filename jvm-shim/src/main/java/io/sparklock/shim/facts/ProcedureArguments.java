package io.sparklock.shim.facts;

import io.sparklock.shim.util.ScalaInterop;
import io.sparklock.shim.wire.Facts.TableField;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.connector.catalog.CatalogManager;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.types.StringType;

/**
 * A {@code CALL}'s constant string arguments as facts, whichever Spark line runs the call (Spark
 * 4's own {@code Call}, Iceberg's {@code Call} on Spark 3.5): the procedure's arguments arrive
 * here in its parameters' order (named arguments already placed), so each one is reported twice:
 *
 * <ul>
 *   <li>under {@code args}, as the session's parser and catalog read it (the generic rule: every
 *       existing table a string names);
 *   <li>under the parameter's own name ({@code table}, {@code source_table}), resolved the way a
 *       catalog's procedures resolve their table arguments: in the procedure's catalog, unless
 *       the first part names a catalog. Python's row for the procedure's class picks those it
 *       locks and how; other strings (a strategy, a filter) are reported too and locked by none.
 * </ul>
 *
 * Under {@code args}, a name the session catalog says does not exist is left out. Under a
 * parameter's name, a name resolved in a table catalog is kept whether or not it exists yet (a
 * procedure may create it: {@code snapshot}'s and {@code register_table}'s target); one of a
 * catalog of procedures only is read as {@code args} is.
 */
final class ProcedureArguments {
  static final String ARGS = "args";

  private ProcedureArguments() {}

  /**
   * @param catalog the procedure's catalog name, or null when unknown
   * @param params the procedure's parameter names, in order (fewer than the arguments: the rest
   *     are reported under {@code args} only)
   */
  static void add(CommandFields out, String catalog, List<String> params, List<Expression> args) {
    SparkSession session = out.refs.session;
    for (int i = 0; i < args.size(); i++) {
      List<String> parts = nameParts(session, args.get(i));
      if (parts == null) {
        continue;
      }
      keep(out, out.nameParts(ARGS, parts));
      if (i < params.size() && params.get(i) != null) {
        TableField named = inCatalog(out, params.get(i), catalog, parts);
        if (named != null) {
          out.add(named); // kept even if absent: a procedure may create it (snapshot's target)
        } else {
          keep(out, out.nameParts(params.get(i), parts));
        }
      }
    }
  }

  private static void keep(CommandFields out, TableField table) {
    if (table != null && (table.exists() == null || table.exists())) {
      out.add(table);
    }
  }

  /** A constant string argument read as a multi-part name, or null (not a string, no name). */
  private static List<String> nameParts(SparkSession session, Expression arg) {
    if (!arg.foldable() || !(arg.dataType() instanceof StringType)) {
      return null;
    }
    Object value = arg.eval(null);
    if (value == null) {
      return null;
    }
    try {
      List<String> parts = new ArrayList<>(ScalaInterop.list(
          session.sessionState().sqlParser().parseMultipartIdentifier(value.toString())));
      return parts.isEmpty() ? null : parts;
    } catch (Exception e) { // not a name (ParseException is checked in Scala only)
      return null;
    }
  }

  /**
   * The table {@code parts} names for a procedure of {@code catalog}: a leading registered catalog
   * name wins, else the procedure's catalog with its current (or default) namespace; null when
   * that catalog holds no tables (procedures only).
   */
  static TableField inCatalog(CommandFields out, String param, String catalog, List<String> parts) {
    CatalogManager manager = out.refs.session.sessionState().catalogManager();
    CatalogPlugin cat = null;
    List<String> rest = parts;
    if (parts.size() > 1 && registered(manager, parts.get(0))) {
      cat = manager.catalog(parts.get(0));
      rest = parts.subList(1, parts.size());
    } else if (catalog != null && registered(manager, catalog)) {
      cat = manager.catalog(catalog);
    }
    if (!(cat instanceof TableCatalog)) {
      return null;
    }
    String[] namespace;
    if (rest.size() > 1) {
      namespace = rest.subList(0, rest.size() - 1).toArray(new String[0]);
    } else if (manager.currentCatalog().name().equals(cat.name())) {
      namespace = manager.currentNamespace();
    } else {
      namespace = cat.defaultNamespace();
    }
    return out.identifier(param, cat, Identifier.of(namespace, rest.get(rest.size() - 1)));
  }

  private static boolean registered(CatalogManager manager, String name) {
    try {
      return manager.isCatalogRegistered(name);
    } catch (RuntimeException e) {
      return false;
    }
  }
}
