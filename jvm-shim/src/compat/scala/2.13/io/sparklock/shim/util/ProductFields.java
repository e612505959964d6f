package io.sparklock.shim.util;

/**
 * The name of a case class field by position: Scala 2.13's {@code Product.productElementName}
 * (2.12 has none; its variant asks Spark's {@code ScalaReflection}).
 */
public final class ProductFields {
  private ProductFields() {}

  /** The name of field {@code i} of {@code p}. */
  public static String name(scala.Product p, int i) {
    return p.productElementName(i);
  }
}
