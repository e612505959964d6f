package io.sparklock.shim.util;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.spark.sql.catalyst.ScalaReflection$;

/**
 * The name of a case class field by position. Scala 2.12 (Spark 3.5) has no
 * {@code Product.productElementName}: the names are the primary constructor's parameter names,
 * read once per class with Spark's own {@code ScalaReflection.getConstructorParameterNames}.
 */
public final class ProductFields {
  private static final Map<Class<?>, List<String>> NAMES = new ConcurrentHashMap<>();

  private ProductFields() {}

  /** The name of field {@code i} of {@code p}; throws when it cannot be known. */
  public static String name(scala.Product p, int i) {
    List<String> names =
        NAMES.computeIfAbsent(
            p.getClass(),
            c -> ScalaInterop.list(ScalaReflection$.MODULE$.getConstructorParameterNames(c)));
    if (i >= names.size()) {
      throw new IndexOutOfBoundsException(p.getClass().getName() + " field " + i);
    }
    return names.get(i);
  }
}
