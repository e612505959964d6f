import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A JDBC (hive-jdbc) client for the sparklock Thrift server tests and benchmark: many concurrent
 * sessions in one JVM, one Connection (= one server session) per thread.
 *
 * <pre>
 * load  URL SESSIONS SECONDS TABLES SEED   random readers/writers of shared tables, some cancelled
 * bench URL SESSIONS STATEMENTS SQL...     each session runs the statements in turn, timed
 * </pre>
 * Prints one result line per outcome kind ("OUTCOME kind count") or per timing
 * ("LATENCY_MS p50 p90 n"), then DONE.
 */
public final class JdbcLoad {
  public static void main(String[] args) throws Exception {
    Class.forName("org.apache.hive.jdbc.HiveDriver");
    if (args[0].equals("load")) {
      load(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]),
          Integer.parseInt(args[4]), Long.parseLong(args[5]));
    } else {
      bench(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]),
          Arrays.copyOfRange(args, 4, args.length));
    }
    System.out.println("DONE");
  }

  private static String kind(Exception e) {
    String m = String.valueOf(e.getMessage());
    for (String k : new String[] {"LOCK_CONFLICT", "LOCK_WAIT_CANCELLED"}) {
      if (m.contains(k)) {
        return k;
      }
    }
    if (m.toLowerCase().contains("cancel")) {
      return "CANCELLED";
    }
    return "ERROR " + m.replace('\n', ' ').substring(0, Math.min(300, m.length()));
  }

  static void load(String url, int sessions, int seconds, int tables, long seed) throws Exception {
    Map<String, AtomicLong> outcomes = new ConcurrentHashMap<>();
    ScheduledExecutorService cancels = Executors.newScheduledThreadPool(2);
    long end = System.nanoTime() + seconds * 1_000_000_000L;
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < sessions; i++) {
      final int n = i;
      Thread t = new Thread(() -> {
        Random rng = new Random(seed + n);
        try (Connection c = DriverManager.getConnection(url, "user" + n, "")) {
          try (Statement s = c.createStatement()) {
            s.execute("SET spark.sparklock.lock.numRetries=50"); // 50 x 200ms budget
          }
          while (System.nanoTime() < end) {
            String table = "t" + rng.nextInt(tables);
            boolean writer = rng.nextInt(4) == 0;
            boolean cancel = rng.nextInt(8) == 0;
            String sql = writer
                ? "INSERT INTO " + table + " VALUES (" + n + ")"
                : "SELECT count(*) FROM " + table;
            try (Statement s = c.createStatement()) {
              if (cancel) {
                cancels.schedule(() -> {
                  try {
                    s.cancel();
                  } catch (Exception ignored) {
                    // the statement may have ended
                  }
                }, rng.nextInt(300), TimeUnit.MILLISECONDS);
              }
              boolean rows = s.execute(sql);
              if (rows) {
                try (ResultSet r = s.getResultSet()) {
                  while (r.next()) {
                    r.getLong(1);
                  }
                }
              }
              outcomes.computeIfAbsent("OK", k -> new AtomicLong()).incrementAndGet();
            } catch (Exception e) {
              String k = kind(e);
              if (cancel && k.startsWith("ERROR")) {
                k = "CANCELLED"; // a cancel can surface as any error text
              }
              outcomes.computeIfAbsent(k, x -> new AtomicLong()).incrementAndGet();
            }
          }
        } catch (Exception e) {
          outcomes.computeIfAbsent("SESSION " + kind(e), x -> new AtomicLong()).incrementAndGet();
        }
      });
      threads.add(t);
      t.start();
    }
    for (Thread t : threads) {
      t.join();
    }
    cancels.shutdownNow();
    for (Map.Entry<String, AtomicLong> e : new TreeMap<>(outcomes).entrySet()) {
      System.out.println("OUTCOME\t" + e.getKey() + "\t" + e.getValue().get());
    }
  }

  static void bench(String url, int sessions, int statements, String[] sql) throws Exception {
    List<Long> nanos = java.util.Collections.synchronizedList(new ArrayList<>());
    List<Thread> threads = new ArrayList<>();
    List<String> errors = java.util.Collections.synchronizedList(new ArrayList<>());
    for (int i = 0; i < sessions; i++) {
      final int n = i;
      Thread t = new Thread(() -> {
        try (Connection c = DriverManager.getConnection(url, "bench" + n, "");
            Statement s = c.createStatement()) {
          for (int k = 0; k < statements; k++) {
            for (String q : sql) {
              String text = q.replace("$N", Integer.toString(n));
              long t0 = System.nanoTime();
              if (s.execute(text)) {
                try (ResultSet r = s.getResultSet()) {
                  while (r.next()) {
                    r.getObject(1);
                  }
                }
              }
              if (k > 0 && !text.startsWith("SET")) { // the first round warms up
                nanos.add(System.nanoTime() - t0);
              }
            }
          }
        } catch (Exception e) {
          errors.add(kind(e));
        }
      });
      threads.add(t);
      t.start();
    }
    for (Thread t : threads) {
      t.join();
    }
    List<Long> sorted = new ArrayList<>(nanos);
    sorted.sort(null);
    if (sorted.isEmpty()) {
      System.out.println("ERRORS\t" + errors);
      return;
    }
    System.out.printf("LATENCY_MS\t%.2f\t%.2f\t%d%n",
        sorted.get(sorted.size() / 2) / 1e6, sorted.get(sorted.size() * 9 / 10) / 1e6,
        sorted.size());
    if (!errors.isEmpty()) {
      System.out.println("ERRORS\t" + errors);
    }
  }
}
