/*
 * sparklock test harness: Hive 4's own metastore lock client (HiveMetaStoreClient with the
 * LockRequestBuilder / LockComponentBuilder that Hive's DbTxnManager builds a statement's lock
 * request with), so the tests can check that Hive's statements and sparklock's wait for each
 * other in the metastore. One JVM stays up between commands.
 *
 * Usage: java -cp <build>:<metastore lib>/* MetastoreLockHarness <thrift://host:port>
 *
 * Protocol: one command per line on stdin, one answer (or lines ending in END) on stdout.
 *
 *   PING                                        -> OK
 *   STATEMENT <queryId> <user> <TXN|NOTXN> <object>:<R|X|W|E>[,...]
 *                  -> OK <lockid> <txnid> <ACQUIRED|WAITING>
 *     The request DbTxnManager.acquireLocks sends for a statement touching those objects:
 *     R = SHARED_READ (a read), X = EXCLUSIVE (a non-ACID INSERT / INSERT OVERWRITE in strict
 *     locking mode, DDL), W = SHARED_WRITE / E = EXCL_WRITE (ACID writers); objects are Hive
 *     display names db, db@t, db@t@k=v/k2=v2. TXN opens a transaction first, as Hive 4 does for
 *     every query (its locks go with its commit); NOTXN is a LOCK TABLE style request.
 *   WAIT <lockid> <timeoutMs>  -> ACQUIRED <ms> | WAITING   (DbLockManager's checkLock loop)
 *   RELEASE <lockid> <txnid>   -> OK   (commit the transaction, or unlock a NOTXN request)
 *   SHOW                       -> rows, then END (IMetaStoreClient.showLocks, Hive's SHOW LOCKS)
 *       lockid TAB db TAB table TAB partition TAB state TAB type TAB user TAB host TAB agentInfo
 *   BENCH <db@t> <n> <rounds>  -> OK <median lock ms> <median unlock ms>   (benchmarks: a
 *       NOTXN request of SHARED_READ on db and EXCLUSIVE on partitions p=0..n-1, timed here)
 *   QUIT                       -> BYE
 *   Any command may answer ERROR <message> (its trace goes to stderr).
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.LockComponentBuilder;
import org.apache.hadoop.hive.metastore.LockRequestBuilder;
import org.apache.hadoop.hive.metastore.api.DataOperationType;
import org.apache.hadoop.hive.metastore.api.LockComponent;
import org.apache.hadoop.hive.metastore.api.LockRequest;
import org.apache.hadoop.hive.metastore.api.LockResponse;
import org.apache.hadoop.hive.metastore.api.LockState;
import org.apache.hadoop.hive.metastore.api.ShowLocksRequest;
import org.apache.hadoop.hive.metastore.api.ShowLocksResponseElement;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf;

public class MetastoreLockHarness {
  private static IMetaStoreClient msc;
  private static final ConcurrentHashMap<Long, Long> open = new ConcurrentHashMap<>();

  public static void main(String[] args) throws Exception {
    PrintStream out = System.out;
    System.setOut(System.err); // libraries' chatter away from the answers
    Configuration conf = MetastoreConf.newMetastoreConf();
    MetastoreConf.setVar(conf, MetastoreConf.ConfVars.THRIFT_URIS, args[0]);
    msc = new HiveMetaStoreClient(conf);
    Thread beats = new Thread(MetastoreLockHarness::heartbeats, "heartbeats");
    beats.setDaemon(true);
    beats.start();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    String line;
    while ((line = in.readLine()) != null) {
      String[] w = line.trim().split(" ");
      try {
        switch (w[0]) {
          case "PING": out.println("OK"); break;
          case "STATEMENT": out.println(statement(w[1], w[2], w[3].equals("TXN"), w[4])); break;
          case "WAIT": out.println(await(Long.parseLong(w[1]), Long.parseLong(w[2]))); break;
          case "RELEASE": release(Long.parseLong(w[1]), Long.parseLong(w[2])); out.println("OK");
            break;
          case "SHOW":
            for (String row : show()) out.println(row);
            out.println("END");
            break;
          case "BENCH": out.println(bench(w[1], Integer.parseInt(w[2]), Integer.parseInt(w[3])));
            break;
          case "QUIT": out.println("BYE"); out.flush(); System.exit(0);
          default: out.println("ERROR unknown command " + w[0]);
        }
      } catch (Exception e) {
        e.printStackTrace();
        out.println("ERROR " + String.valueOf(e.getMessage()).replace('\n', ' '));
      }
      out.flush();
    }
  }

  /** What AcidUtils.makeLockComponents makes of one object, and DbTxnManager of the set. */
  static synchronized String statement(String queryId, String user, boolean txn, String spec)
      throws Exception {
    long txnId = txn ? msc.openTxn(user) : 0;
    LockRequestBuilder request = new LockRequestBuilder(queryId);
    request.setUser(user);
    if (txn) request.setTransactionId(txnId);
    for (String item : spec.split(",")) {
      int colon = item.lastIndexOf(':');
      String[] name = item.substring(0, colon).split("@", 3);
      LockComponentBuilder c = new LockComponentBuilder().setDbName(name[0]);
      if (name.length > 1) c.setTableName(name[1]);
      if (name.length > 2) c.setPartitionName(name[2]);
      switch (item.substring(colon + 1)) {
        case "R": c.setSharedRead(); c.setOperationType(DataOperationType.SELECT); break;
        case "X": c.setExclusive(); c.setOperationType(DataOperationType.INSERT); break;
        case "W": c.setSharedWrite(); c.setOperationType(DataOperationType.UPDATE); break;
        case "E": c.setExclWrite(); c.setOperationType(DataOperationType.UPDATE); break;
        default: throw new IllegalArgumentException("mode " + item);
      }
      if (!txn) c.setOperationType(DataOperationType.NO_TXN);
      c.setIsTransactional(false);
      request.addLockComponent(c.build());
    }
    LockResponse r = msc.lock(request.build());
    if (txn) open.put(txnId, r.getLockid());
    return "OK " + r.getLockid() + " " + txnId + " " + r.getState();
  }

  /** DbLockManager.lock's wait: checkLock with a growing pause until granted or out of time. */
  static String await(long lockId, long timeoutMs) throws Exception {
    long start = System.currentTimeMillis();
    long pause = 20;
    while (true) {
      LockState state;
      synchronized (MetastoreLockHarness.class) {
        state = msc.checkLock(lockId).getState();
      }
      long waited = System.currentTimeMillis() - start;
      if (state == LockState.ACQUIRED) return "ACQUIRED " + waited;
      if (waited >= timeoutMs) return "WAITING";
      Thread.sleep(Math.min(pause, Math.max(1, timeoutMs - waited)));
      pause = Math.min(pause * 2, 500);
    }
  }

  static synchronized void release(long lockId, long txnId) throws Exception {
    if (txnId > 0) {
      open.remove(txnId);
      msc.commitTxn(txnId);
    } else {
      msc.unlock(lockId);
    }
  }

  static synchronized List<String> show() throws Exception {
    List<String> rows = new ArrayList<>();
    for (ShowLocksResponseElement e : msc.showLocks(new ShowLocksRequest()).getLocks()) {
      rows.add(e.getLockid() + "\t" + e.getDbname() + "\t" + e.getTablename() + "\t"
          + e.getPartname() + "\t" + e.getState() + "\t" + e.getType() + "\t" + e.getUser()
          + "\t" + e.getHostname() + "\t" + e.getAgentInfo());
    }
    return rows;
  }

  static synchronized String bench(String table, int n, int rounds) throws Exception {
    String[] name = table.split("@");
    double[] lock = new double[rounds];
    double[] unlock = new double[rounds];
    for (int r = -3; r < rounds; r++) { // three untimed rounds warm the JIT
      LockRequestBuilder request = new LockRequestBuilder("bench-" + r);
      request.setUser("bench");
      request.addLockComponent(new LockComponentBuilder().setDbName(name[0]).setSharedRead()
          .setOperationType(DataOperationType.NO_TXN).build());
      for (int i = 0; i < n; i++) {
        request.addLockComponent(new LockComponentBuilder().setDbName(name[0])
            .setTableName(name[1]).setPartitionName("p=" + i).setExclusive()
            .setOperationType(DataOperationType.NO_TXN).build());
      }
      LockRequest built = request.build();
      long t0 = System.nanoTime();
      LockResponse response = msc.lock(built);
      long t1 = System.nanoTime();
      msc.unlock(response.getLockid());
      long t2 = System.nanoTime();
      if (response.getState() != LockState.ACQUIRED) throw new IllegalStateException("waiting");
      if (r >= 0) {
        lock[r] = (t1 - t0) / 1e6;
        unlock[r] = (t2 - t1) / 1e6;
      }
    }
    java.util.Arrays.sort(lock);
    java.util.Arrays.sort(unlock);
    return "OK " + lock[rounds / 2] + " " + unlock[rounds / 2];
  }

  /** Hive's Heartbeater: open transactions stay alive while the harness holds them. */
  static void heartbeats() {
    while (true) {
      try {
        Thread.sleep(1000);
        for (java.util.Map.Entry<Long, Long> e : open.entrySet()) {
          synchronized (MetastoreLockHarness.class) {
            msc.heartbeat(e.getKey(), e.getValue());
          }
        }
      } catch (Exception e) {
        e.printStackTrace();
      }
    }
  }
}
