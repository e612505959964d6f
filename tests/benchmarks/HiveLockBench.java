/*
 * sparklock benchmarks, Hive side: times Hive 2.3.10's real ZooKeeperHiveLockManager (from the
 * pyspark jars) INSIDE the JVM, so that no harness protocol round trip is counted.
 *
 * Compiled by tests/benchmarks/common.py with tests.support.hive_harness.build_harness, run as:
 *   java --add-opens=java.base/java.net=ALL-UNNAMED -cp <build>:<pyspark>/jars/* \
 *        HiveLockBench <command> <host:port> <namespace> <args...>
 *
 * Commands (results on stdout, one line each; everything the libraries print goes to stderr):
 *   latency <N,N,...> <rounds,rounds,...> <warmup>
 *       per N: Hive's list lock of db S + table S + N partitions X, then releaseLocks, `warmup`
 *       untimed rounds then `rounds` timed ones:      LAT <N> <lock ms> <unlock ms>
 *       then one counted round (server's zk_packets_received delta, minus the mntr probe):
 *                                                     REQ <N> <lock requests> <unlock requests>
 *   handoff <rounds> <sleep ms>
 *       a reader holds db S + table S; a writer (db S + table X, Hive's per-object retry with
 *       hive.lock.sleep.between.retries = sleep ms) waits behind it; the reader releases:
 *                                                     HANDOFF <ms from release call to grant>
 *   throughput <threads,threads,...> <seconds> <repeats> <sleep ms>
 *       per thread count and sharing (disjoint: a table per thread; shared: one table), each
 *       thread its own manager (as HiveServer2 sessions have), all sharing Hive's one Curator
 *       client; a cycle is lock + release of db S + table S + partition S:
 *                                  TPUT <disjoint|shared> <threads> <cycles/s> <ZooKeeper connections>
 *   wide <partitions> <rounds>
 *       a full read of a table with <partitions> partitions: db S + table S + every partition S
 *                                                     WIDE <lock ms> <unlock ms> <znodes created>
 *   Every command first warms the JIT up (-Dbench.warmup=<seconds>, default 3) and ends with DONE.
 */

import java.io.OutputStream;
import java.io.PrintStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.ql.lockmgr.HiveLock;
import org.apache.hadoop.hive.ql.lockmgr.HiveLockManagerCtx;
import org.apache.hadoop.hive.ql.lockmgr.HiveLockMode;
import org.apache.hadoop.hive.ql.lockmgr.HiveLockObj;
import org.apache.hadoop.hive.ql.lockmgr.HiveLockObject;
import org.apache.hadoop.hive.ql.lockmgr.HiveLockObject.HiveLockObjectData;
import org.apache.hadoop.hive.ql.lockmgr.zookeeper.CuratorFrameworkSingleton;
import org.apache.hadoop.hive.ql.lockmgr.zookeeper.ZooKeeperHiveLockManager;

public final class HiveLockBench {
  private final String host;
  private final int port;
  private final String namespace;
  private final PrintStream out;

  private HiveLockBench(PrintStream out, String quorum, String namespace) {
    this.out = out;
    int colon = quorum.lastIndexOf(':');
    this.host = quorum.substring(0, colon);
    this.port = Integer.parseInt(quorum.substring(colon + 1));
    this.namespace = namespace;
  }

  private ZooKeeperHiveLockManager manager(int numRetries, long sleepMs) throws Exception {
    HiveConf c = new HiveConf();
    c.set("hive.support.concurrency", "true");
    c.set("hive.lock.manager", ZooKeeperHiveLockManager.class.getName());
    c.set("hive.zookeeper.quorum", host);
    c.set("hive.zookeeper.client.port", String.valueOf(port));
    c.set("hive.zookeeper.namespace", namespace);
    c.set("hive.zookeeper.session.timeout", "30000ms");
    c.set("hive.lock.numretries", String.valueOf(numRetries));
    c.set("hive.unlock.numretries", "10");
    c.set("hive.lock.sleep.between.retries", sleepMs + "ms");
    ZooKeeperHiveLockManager m = new ZooKeeperHiveLockManager();
    m.setContext(new HiveLockManagerCtx(c));
    return m;
  }

  private static HiveLockObjectData data(String queryId) {
    return new HiveLockObjectData(
        queryId, String.valueOf(System.currentTimeMillis()), "IMPLICIT", "benchmark statement");
  }

  private static HiveLockObj obj(HiveLockObjectData d, HiveLockMode mode, String... paths) {
    return new HiveLockObj(new HiveLockObject(paths, d), mode);
  }

  /** db S + table S + N partitions in `mode` (a statement's lock set, as Hive's Driver builds). */
  private static List<HiveLockObj> lockSet(String q, String table, int n, HiveLockMode mode) {
    HiveLockObjectData d = data(q);
    List<HiveLockObj> objs = new ArrayList<>(n + 2);
    objs.add(obj(d, HiveLockMode.SHARED, "bench"));
    objs.add(obj(d, HiveLockMode.SHARED, "bench", table));
    for (int i = 0; i < n; i++) {
      objs.add(obj(d, mode, "bench", table, String.format("p=%05d", i)));
    }
    return objs;
  }

  /** The server's request counter (each mntr probe counts as one packet itself). */
  private long packets() throws Exception {
    return mntr("zk_packets_received");
  }

  /** Client connections open on the server (its cons answer lists them, and this probe). */
  private long connections() throws Exception {
    long lines = 0;
    for (String line : fourLetter("cons").split("\n")) {
      if (!line.trim().isEmpty()) {
        lines++;
      }
    }
    return Math.max(0, lines - 1);
  }

  private String fourLetter(String word) throws Exception {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 2000);
      OutputStream o = s.getOutputStream();
      o.write(word.getBytes(StandardCharsets.US_ASCII));
      o.flush();
      return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  /** One number of the server's mntr answer. */
  private long mntr(String key) throws Exception {
    for (String line : fourLetter("mntr").split("\n")) {
      if (line.startsWith(key + "\t")) {
        return Long.parseLong(line.substring(line.indexOf('\t') + 1).trim());
      }
    }
    throw new IllegalStateException("no " + key + " in mntr");
  }

  private static double ms(long nanos) {
    return nanos / 1e6;
  }

  private static List<HiveLock> mustLock(ZooKeeperHiveLockManager m, List<HiveLockObj> objs)
      throws Exception {
    List<HiveLock> locks = m.lock(objs, false, null);
    if (locks == null) {
      throw new IllegalStateException("Hive refused an uncontended lock set");
    }
    return locks;
  }

  /** JIT warm-up before anything is timed: lock+release cycles of small and larger sets. */
  private void warmup(double seconds) throws Exception {
    ZooKeeperHiveLockManager m = manager(1, 10);
    long end = System.nanoTime() + (long) (seconds * 1e9);
    int i = 0;
    while (System.nanoTime() < end) {
      int n = i % 10 == 9 ? 100 : 3;
      m.releaseLocks(mustLock(m, lockSet("hive_warmup_" + i++, "warm", n, HiveLockMode.EXCLUSIVE)));
    }
  }

  // -- latency ----------------------------------------------------------------------------------
  private void latency(String[] ns, String[] rounds, int warmup) throws Exception {
    ZooKeeperHiveLockManager m = manager(1, 10);
    for (int k = 0; k < ns.length; k++) {
      int n = Integer.parseInt(ns[k]);
      int r = Integer.parseInt(rounds[Math.min(k, rounds.length - 1)]);
      for (int i = 0; i < warmup + r; i++) {
        List<HiveLockObj> objs = lockSet("hive_bench_" + n + "_" + i, "t", n, HiveLockMode.EXCLUSIVE);
        long t0 = System.nanoTime();
        List<HiveLock> locks = mustLock(m, objs);
        long t1 = System.nanoTime();
        m.releaseLocks(locks);
        long t2 = System.nanoTime();
        if (i >= warmup) {
          out.printf("LAT %d %.3f %.3f%n", n, ms(t1 - t0), ms(t2 - t1));
        }
      }
      List<HiveLockObj> objs = lockSet("hive_bench_count_" + n, "t", n, HiveLockMode.EXCLUSIVE);
      long p0 = packets();
      List<HiveLock> locks = mustLock(m, objs);
      long p1 = packets();
      m.releaseLocks(locks);
      long p2 = packets();
      out.printf("REQ %d %d %d%n", n, p1 - p0 - 1, p2 - p1 - 1);
    }
  }

  // -- handoff ----------------------------------------------------------------------------------
  private void handoff(int rounds, long sleepMs) throws Exception {
    ZooKeeperHiveLockManager reader = manager(1, sleepMs);
    ZooKeeperHiveLockManager writer = manager(1_000_000, sleepMs);
    Random random = new Random(42);
    for (int i = 0; i < rounds; i++) {
      List<HiveLock> held = mustLock(reader, lockSet("hive_reader_" + i, "h", 0, HiveLockMode.SHARED));
      final List<HiveLockObj> want = new ArrayList<>();
      HiveLockObjectData d = data("hive_writer_" + i);
      want.add(obj(d, HiveLockMode.SHARED, "bench"));
      want.add(obj(d, HiveLockMode.EXCLUSIVE, "bench", "h"));
      AtomicLong granted = new AtomicLong();
      CountDownLatch tried = new CountDownLatch(1);
      Thread w = new Thread(() -> {
        try {
          tried.countDown();
          List<HiveLock> got = writer.lock(want, false, null);
          granted.set(System.nanoTime());
          writer.releaseLocks(got);
        } catch (Exception e) {
          e.printStackTrace();
        }
      });
      w.start();
      tried.await();
      // Let the writer fail its first attempt, then release at a random point of its sleep.
      Thread.sleep(30 + (long) (random.nextDouble() * sleepMs));
      long t0 = System.nanoTime();
      reader.releaseLocks(held);
      w.join();
      out.printf("HANDOFF %.3f%n", ms(granted.get() - t0));
    }
  }

  // -- throughput -------------------------------------------------------------------------------
  private void throughput(String[] threadCounts, double seconds, int repeats, long sleepMs)
      throws Exception {
    for (String sharing : new String[] {"disjoint", "shared"}) {
      for (String tc : threadCounts) {
        int threads = Integer.parseInt(tc);
        List<ZooKeeperHiveLockManager> managers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          managers.add(manager(100, sleepMs));
        }
        for (int rep = 0; rep < repeats; rep++) {
          AtomicBoolean stop = new AtomicBoolean();
          AtomicLong cycles = new AtomicLong();
          CountDownLatch start = new CountDownLatch(1);
          List<Thread> workers = new ArrayList<>();
          for (int t = 0; t < threads; t++) {
            final ZooKeeperHiveLockManager m = managers.get(t);
            final String table = sharing.equals("shared") ? "s" : "d" + t;
            Thread th = new Thread(() -> {
              try {
                start.await();
                int i = 0;
                while (!stop.get()) {
                  List<HiveLock> locks = m.lock(
                      lockSet("hive_tput_" + i++, table, 1, HiveLockMode.SHARED), false, null);
                  if (locks != null) {
                    m.releaseLocks(locks);
                    cycles.incrementAndGet();
                  }
                }
              } catch (Exception e) {
                e.printStackTrace();
              }
            });
            th.start();
            workers.add(th);
          }
          long t0 = System.nanoTime();
          start.countDown();
          Thread.sleep((long) (seconds * 500));
          long connections = connections();
          Thread.sleep((long) (seconds * 500));
          long done = cycles.get();
          long t1 = System.nanoTime();
          stop.set(true);
          for (Thread th : workers) {
            th.join();
          }
          out.printf("TPUT %s %d %.1f %d%n", sharing, threads, done / ((t1 - t0) / 1e9),
              connections);
        }
      }
    }
  }

  // -- a wide read ------------------------------------------------------------------------------
  private void wide(int partitions, int rounds) throws Exception {
    ZooKeeperHiveLockManager m = manager(1, 10);
    for (int i = 0; i < rounds; i++) {
      List<HiveLockObj> objs = lockSet("hive_wide_" + i, "w", partitions, HiveLockMode.SHARED);
      long z0 = mntr("zk_znode_count");
      long t0 = System.nanoTime();
      List<HiveLock> locks = mustLock(m, objs);
      long t1 = System.nanoTime();
      long z1 = mntr("zk_znode_count");
      long t2 = System.nanoTime();
      m.releaseLocks(locks);
      long t3 = System.nanoTime();
      out.printf("WIDE %.3f %.3f %d%n", ms(t1 - t0), ms(t3 - t2), z1 - z0);
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 3) {
      System.err.println("usage: HiveLockBench <command> <host:port> <namespace> <args...>");
      System.exit(2);
    }
    PrintStream out = new PrintStream(
        new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8.name());
    System.setOut(System.err);
    HiveLockBench b = new HiveLockBench(out, args[1], args[2]);
    b.warmup(Double.parseDouble(System.getProperty("bench.warmup", "3")));
    switch (args[0]) {
      case "latency":
        b.latency(args[3].split(","), args[4].split(","), Integer.parseInt(args[5]));
        break;
      case "handoff":
        b.handoff(Integer.parseInt(args[3]), Long.parseLong(args[4]));
        break;
      case "throughput":
        b.throughput(args[3].split(","), Double.parseDouble(args[4]), Integer.parseInt(args[5]),
            Long.parseLong(args[6]));
        break;
      case "wide":
        b.wide(Integer.parseInt(args[3]), Integer.parseInt(args[4]));
        break;
      default:
        System.err.println("unknown command " + args[0]);
        System.exit(2);
    }
    out.println("DONE");
    CuratorFrameworkSingleton.closeAndReleaseInstance();
    System.exit(0);
  }
}
