package io.sparklock.shim.listing;

import io.sparklock.shim.util.ScalaInterop;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathFilter;
import org.apache.hadoop.mapred.FileInputFormat;
import org.apache.hadoop.mapred.JobConf;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.FileStatusCache;

/**
 * The few Spark internals that listing one partition directory at a time needs, reached by
 * reflection because Spark keeps them private (the same in Spark 3.5 to 4.3): a file index's
 * {@link FileStatusCache}, Spark's own parallel leaf-file listing
 * ({@code InMemoryFileIndex.bulkListLeafFiles}: the same filters, the same listing job above
 * {@code spark.sql.sources.parallelPartitionDiscovery.threshold} paths) and an in-memory index's
 * rebuild from its cache ({@code refresh0}, what {@code refresh()} does after dropping the whole
 * cache). Any of them missing throws {@link ReflectiveOperationException}: the caller then
 * refreshes the whole index, as before.
 */
final class PathListing {
  private PathListing() {}

  private static final String IN_MEMORY =
      "org.apache.spark.sql.execution.datasources.InMemoryFileIndex";

  /** The index's file status cache, or null when it has none that can hold a listing. */
  static FileStatusCache cacheOf(FileIndex index) throws ReflectiveOperationException {
    for (Class<?> c = index.getClass(); c != null; c = c.getSuperclass()) {
      for (Field f : c.getDeclaredFields()) {
        if (FileStatusCache.class.isAssignableFrom(f.getType())) {
          f.setAccessible(true);
          FileStatusCache cache = (FileStatusCache) f.get(index);
          return cache == null || cache.getClass().getName().contains("NoopCache") ? null : cache;
        }
      }
    }
    throw new NoSuchFieldException(index.getClass().getName() + ".fileStatusCache");
  }

  /** Lists {@code paths} as Spark lists partition directories: path → its leaf files. */
  static Map<Path, FileStatus[]> list(SparkSession session, List<Path> paths)
      throws ReflectiveOperationException {
    Object module = Class.forName(IN_MEMORY + "$").getField("MODULE$").get(null);
    Method bulk = null;
    for (Method m : module.getClass().getMethods()) {
      if (m.getName().equals("bulkListLeafFiles") && m.getParameterCount() == 5) {
        bulk = m;
      }
    }
    if (bulk == null) {
      throw new NoSuchMethodException(IN_MEMORY + ".bulkListLeafFiles");
    }
    Configuration conf = session.sessionState().newHadoopConf();
    PathFilter filter = FileInputFormat.getInputPathFilter(new JobConf(conf, PathListing.class));
    Object listed = bulk.invoke(module, ScalaInterop.seq(paths), conf, filter, session,
        scala.collection.immutable.Map$.MODULE$.empty());
    Map<Path, FileStatus[]> out = new LinkedHashMap<>();
    for (Object o : ScalaInterop.anyList((scala.collection.Iterable<?>) listed)) {
      scala.Tuple2<?, ?> pair = (scala.Tuple2<?, ?>) o;
      List<Object> files = ScalaInterop.anyList((scala.collection.Iterable<?>) pair._2());
      List<FileStatus> statuses = new ArrayList<>(files.size());
      for (Object f : files) {
        statuses.add((FileStatus) f);
      }
      out.put((Path) pair._1(), statuses.toArray(new FileStatus[0]));
    }
    return out;
  }

  /** Rebuilds an in-memory index from its cache (listing only what the cache lacks). */
  static void rebuildFromCache(FileIndex index) throws ReflectiveOperationException {
    Method refresh0 = Class.forName(IN_MEMORY).getDeclaredMethod("refresh0");
    refresh0.setAccessible(true);
    refresh0.invoke(index);
  }
}
