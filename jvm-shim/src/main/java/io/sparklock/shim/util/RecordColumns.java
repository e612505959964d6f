package io.sparklock.shim.util;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A message record read as result columns: its components, in order, named in snake_case
 * ({@code queryId} → {@code query_id}). SHOW LOCKS and EXPLAIN LOCKS take their columns from the
 * records Python answers with, so a column is defined once per side (the record here, the
 * dataclass in {@code sparklock/protocol/messages.py}).
 */
public final class RecordColumns {
  private final Map<String, Method> accessors = new LinkedHashMap<>();

  public RecordColumns(Class<? extends Record> type) {
    for (RecordComponent c : type.getRecordComponents()) {
      accessors.put(snakeCase(c.getName()), c.getAccessor());
    }
  }

  /** Every column, in component order. */
  public List<String> names() {
    return Collections.unmodifiableList(new ArrayList<>(accessors.keySet()));
  }

  /** {@code names}, checked to be columns of the record (a typo fails when the class loads). */
  public List<String> select(String... names) {
    for (String name : names) {
      if (!accessors.containsKey(name)) {
        throw new IllegalArgumentException("no column " + name + " in " + accessors.keySet());
      }
    }
    return List.of(names);
  }

  /** The values of {@code columns} in {@code row}, in that order. */
  public Object[] values(Record row, List<String> columns) {
    Object[] out = new Object[columns.size()];
    for (int i = 0; i < out.length; i++) {
      try {
        out[i] = accessors.get(columns.get(i)).invoke(row);
      } catch (IllegalAccessException | InvocationTargetException e) {
        throw new IllegalStateException("reading column " + columns.get(i) + " of " + row, e);
      }
    }
    return out;
  }

  private static String snakeCase(String camel) {
    StringBuilder out = new StringBuilder();
    for (char ch : camel.toCharArray()) {
      if (Character.isUpperCase(ch)) {
        out.append('_').append(Character.toLowerCase(ch));
      } else {
        out.append(ch);
      }
    }
    return out.toString();
  }
}
