package io.sparklock.shim.util;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Every Scala collection conversion of the shim, in one place, written against what Scala 2.12
 * (Spark 3.5) and 2.13 (Spark 4.x) share: iterators and {@code scala.collection.immutable.List}
 * -- not {@code scala.jdk.javaapi.CollectionConverters} (2.13 only) nor
 * {@code scala.collection.JavaConverters} (2.12, deprecated in 2.13). Copies, in iteration
 * order; nothing here knows about Spark.
 *
 * <p>Receive Spark's collections as {@code scala.collection.Iterable}/{@code Seq} (a supertype of
 * both versions' {@code Seq}); hand Spark an {@code immutable.Seq} from {@link #seq} (a subtype of
 * both).
 */
public final class ScalaInterop {
  private ScalaInterop() {}

  /** The elements of a Scala collection, in order. */
  public static <T> List<T> list(scala.collection.Iterable<T> items) {
    return list(items.iterator());
  }

  /** The rest of a Scala iterator, in order. */
  public static <T> List<T> list(scala.collection.Iterator<T> items) {
    List<T> out = new ArrayList<>();
    while (items.hasNext()) {
      out.add(items.next());
    }
    return out;
  }

  /** The elements of a Scala collection of unknown element type, in order. */
  @SuppressWarnings("unchecked")
  public static List<Object> anyList(scala.collection.Iterable<?> items) {
    return list((scala.collection.Iterable<Object>) items);
  }

  /** A Scala map's entries, in its iteration order. */
  public static <K, V> Map<K, V> map(scala.collection.Map<K, V> m) {
    Map<K, V> out = new LinkedHashMap<>();
    scala.collection.Iterator<scala.Tuple2<K, V>> it = m.iterator();
    while (it.hasNext()) {
      scala.Tuple2<K, V> kv = it.next();
      out.put(kv._1(), kv._2());
    }
    return out;
  }

  /** An immutable Scala Seq (a {@code List}) of a Java list. */
  public static <T> scala.collection.immutable.Seq<T> seq(List<T> items) {
    scala.collection.immutable.List<T> out = scala.collection.immutable.List$.MODULE$.empty();
    for (int i = items.size() - 1; i >= 0; i--) {
      out = out.$colon$colon(items.get(i));
    }
    return out;
  }

  /** {@code items} as an immutable Scala Seq: itself when it is one (always, on Scala 2.13). */
  @SuppressWarnings("unchecked")
  public static <T> scala.collection.immutable.Seq<T> immutableSeq(scala.collection.Iterable<T> items) {
    if (items instanceof scala.collection.immutable.Seq) {
      return (scala.collection.immutable.Seq<T>) items;
    }
    return seq(list(items));
  }

  /** An Option's value, or null. */
  public static <T> T orNull(scala.Option<T> o) {
    return o.isDefined() ? o.get() : null;
  }

  /** A value that may be an Option: the Option's value (null when empty), else the value. */
  public static Object unwrapOption(Object v) {
    return v instanceof scala.Option ? orNull((scala.Option<?>) v) : v;
  }
}
