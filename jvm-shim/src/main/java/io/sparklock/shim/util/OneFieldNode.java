package io.sparklock.shim.util;

/**
 * The {@code scala.Product} side of a plan node written in Java whose one constructor field is
 * its child. Spark's nodes are Scala case classes, which get arity, elements and {@code canEqual}
 * from the compiler; a Java node spells them out, and the nodes of sparklock (a physical one,
 * {@link SparkLockExec}, and the analyzer's {@code CallUnderLock}) extend different Spark classes,
 * so they share these through an interface. Scala compiles {@code Product}'s abstract members to
 * abstract interface methods (2.12 and 2.13), which these defaults implement.
 */
public interface OneFieldNode extends scala.Product {
  /** The node's one field (what {@code productElement(0)} is). */
  Object onlyField();

  @Override
  default int productArity() {
    return 1;
  }

  @Override
  default Object productElement(int n) {
    if (n == 0) {
      return onlyField();
    }
    throw new IndexOutOfBoundsException(String.valueOf(n));
  }

  /** Equal only to a node of the same class (neither node has subclasses). */
  @Override
  default boolean canEqual(Object that) {
    return that != null && that.getClass() == getClass();
  }
}
