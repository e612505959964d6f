package io.sparklock.shim;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Every Scala collection conversion of the shim (the lock statements' own apart), in one place:
 * the one file a Scala version (2.12 vs 2.13 collections) has to switch. Copies, in iteration
 * order; nothing here knows about Spark.
 */
final class ScalaInterop {
  private ScalaInterop() {}

  /** The elements of a Scala collection, in order. */
  static <T> List<T> list(scala.collection.Iterable<T> items) {
    return list(items.iterator());
  }

  /** The rest of a Scala iterator, in order. */
  static <T> List<T> list(scala.collection.Iterator<T> items) {
    List<T> out = new ArrayList<>();
    scala.jdk.javaapi.CollectionConverters.asJava(items).forEachRemaining(out::add);
    return out;
  }

  /** The elements of a Scala collection of unknown element type, in order. */
  @SuppressWarnings("unchecked")
  static List<Object> anyList(scala.collection.Iterable<?> items) {
    return list((scala.collection.Iterable<Object>) items);
  }

  /** A Scala map's entries, in its iteration order. */
  static <K, V> Map<K, V> map(scala.collection.Map<K, V> m) {
    return new LinkedHashMap<>(scala.jdk.javaapi.CollectionConverters.asJava(m));
  }

  /** An immutable Scala Seq of a Java list. */
  static <T> scala.collection.immutable.Seq<T> seq(List<T> items) {
    return scala.jdk.javaapi.CollectionConverters.asScala(items).toList();
  }

  /** An Option's value, or null. */
  static <T> T orNull(scala.Option<T> o) {
    return o.isDefined() ? o.get() : null;
  }

  /** A value that may be an Option: the Option's value (null when empty), else the value. */
  static Object unwrapOption(Object v) {
    return v instanceof scala.Option ? orNull((scala.Option<?>) v) : v;
  }
}
