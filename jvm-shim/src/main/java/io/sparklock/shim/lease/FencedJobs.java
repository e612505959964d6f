package io.sparklock.shim.lease;

import java.util.Collections;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes a fence stick: a job that starts carrying the fence tag ({@link FenceTags}) of a fenced
 * statement is cancelled as soon as the listener bus delivers its start. The watchdog cancels
 * the jobs running at the fence; without this, a job the statement submitted afterwards (its
 * next stage, the next partition of an RDD path) would run to its end.
 */
final class FencedJobs extends SparkListener {
  private static final Logger LOG = LoggerFactory.getLogger("io.sparklock.shim.Lease");

  /** The tag of each fenced statement still bound, and why it was fenced. */
  private static final Map<String, String> FENCED = new ConcurrentHashMap<>();

  private static final Set<SparkContext> REGISTERED =
      Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

  /** Spark's property holding a job's tags, comma-separated (SparkContext.SPARK_JOB_TAGS). */
  private static final String JOB_TAGS = "spark.job.tags";

  private final SparkContext sc;

  private FencedJobs(SparkContext sc) {
    this.sc = sc;
  }

  /** Listens on {@code sc} (once per context): before its first statement is bound. */
  static void register(SparkContext sc) {
    if (sc != null && REGISTERED.add(sc)) {
      sc.addSparkListener(new FencedJobs(sc));
    }
  }

  /** {@code handle} was fenced: its later jobs are cancelled until it is unbound. */
  static void fenced(String handle, String reason) {
    FENCED.put(FenceTags.of(handle), reason);
  }

  /** {@code handle} ended: its tag no longer means anything. */
  static void forget(String handle) {
    FENCED.remove(FenceTags.of(handle));
  }

  @Override
  public void onJobStart(SparkListenerJobStart start) {
    if (FENCED.isEmpty()) {
      return; // the common case: nothing fenced, nothing to read
    }
    Properties props = start.properties();
    String tags = props == null ? null : props.getProperty(JOB_TAGS);
    if (tags == null) {
      return;
    }
    for (String tag : tags.split(",")) {
      String reason = FENCED.get(tag);
      if (reason != null) {
        LOG.error("sparklock: cancelling job {} of a fenced statement ({})", start.jobId(), tag);
        sc.cancelJob(start.jobId(), "LOCKS_LOST: " + reason);
        return;
      }
    }
  }
}
