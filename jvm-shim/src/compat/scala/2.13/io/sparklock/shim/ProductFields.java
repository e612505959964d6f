package io.sparklock.shim;

/**
 * The name of a case class field by position: Scala 2.13's {@code Product.productElementName}
 * (2.12 has none; its variant asks Spark's {@code ScalaReflection}).
 */
final class ProductFields {
  private ProductFields() {}

  /** The name of field {@code i} of {@code p}. */
  static String name(scala.Product p, int i) {
    return p.productElementName(i);
  }
}
