/*
 * sparklock test harness: drives Hive 2.3's real ZooKeeperHiveLockManager (from the pyspark jars)
 * against a given ZooKeeper, so that the tests can check that sparklock and Hive see each other's
 * locks. One JVM stays up and holds locks between commands.
 *
 * Usage: java --add-opens=java.base/java.net=ALL-UNNAMED -cp <build>:<pyspark>/jars/* \
 *            HiveLockHarness <host:port> <namespace>
 *
 * Protocol: one command per line on stdin, one answer (or one block ending in END) on stdout.
 * Everything the libraries print goes to stderr; stdout carries only answers.
 *
 *   PING                                   -> OK
 *   NAMESPACE <ns>                         -> OK   (releases what is held; a new manager on
 *                                             hive.zookeeper.namespace=ns, same ZooKeeper client)
 *   QUERY <queryId> [<query string...>]    -> OK            (lock data of the following locks)
 *   LOCK <name> SHARED|EXCLUSIVE [IMPLICIT|EXPLICIT]
 *                                          -> OK <group> <znode path> | REFUSED <message>
 *                                             (Hive's single-object lock: creates every parent node)
 *   LOCKSET <name>:<mode>,<name>:<mode>,... [IMPLICIT|EXPLICIT]
 *                                          -> OK <group> <n locks> | REFUSED <message>
 *                                             (Hive's list API: sorted, deduplicated, all-or-nothing;
 *                                             what a statement does)
 *   RELEASE <group>                        -> OK <n released> (one LOCK/LOCKSET, as a statement end)
 *   UNLOCK <name>                          -> OK <n released> (locks this harness holds on <name>)
 *   UNLOCKALL                              -> OK <n released>
 *   UNLOCKANY <name>                       -> OK <n> | NOTLOCKED   (Hive's UNLOCK TABLE: every lock
 *                                             on exactly <name>, whoever holds it)
 *   SHOW [<name>]                          -> lines, then END (Hive's getLocks(..., false, true))
 *       name TAB mode TAB queryId TAB lockMode TAB queryStr TAB clientIp TAB lockTime TAB path
 *       (a field Hive could not read is \N; TAB and newlines inside fields become spaces)
 *   QUIT                                   -> BYE, then exit (implicit locks die with the session)
 *   Any command may also answer ERROR <message> (an exception; its trace goes to stderr).
 *
 * Names are Hive display names: db, db@t, db@t@k1=v1/k2=v2.
 */

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.ql.lockmgr.HiveLock;
import org.apache.hadoop.hive.ql.lockmgr.HiveLockManagerCtx;
import org.apache.hadoop.hive.ql.lockmgr.HiveLockMode;
import org.apache.hadoop.hive.ql.lockmgr.HiveLockObj;
import org.apache.hadoop.hive.ql.lockmgr.HiveLockObject;
import org.apache.hadoop.hive.ql.lockmgr.HiveLockObject.HiveLockObjectData;
import org.apache.hadoop.hive.ql.lockmgr.zookeeper.CuratorFrameworkSingleton;
import org.apache.hadoop.hive.ql.lockmgr.zookeeper.ZooKeeperHiveLock;
import org.apache.hadoop.hive.ql.lockmgr.zookeeper.ZooKeeperHiveLockManager;
import org.apache.hadoop.hive.ql.metadata.Hive;

public final class HiveLockHarness {
  private final PrintStream out;
  private final String host;
  private final String port;
  private HiveConf conf;
  private ZooKeeperHiveLockManager manager;
  private final Map<Integer, List<HiveLock>> held = new LinkedHashMap<>();
  private int nextGroup = 1;
  private String queryId = "hive_harness_query";
  private String queryStr = "harness query";

  private HiveLockHarness(PrintStream out, String quorum) {
    this.out = out;
    int colon = quorum.lastIndexOf(':');
    this.host = colon < 0 ? quorum : quorum.substring(0, colon);
    this.port = colon < 0 ? "2181" : quorum.substring(colon + 1);
  }

  private void useNamespace(String namespace) throws Exception {
    HiveConf c = new HiveConf();
    c.set("hive.support.concurrency", "true");
    c.set("hive.lock.manager", ZooKeeperHiveLockManager.class.getName());
    c.set("hive.zookeeper.quorum", host);
    c.set("hive.zookeeper.client.port", port);
    c.set("hive.zookeeper.namespace", namespace);
    c.set("hive.zookeeper.session.timeout", "20000ms");
    c.set("hive.zookeeper.connection.basesleeptime", "100ms");
    c.set("hive.lock.numretries", "1");
    c.set("hive.unlock.numretries", "3");
    c.set("hive.lock.sleep.between.retries", "10ms");
    // getLocks() calls Hive.get(conf) even when it verifies nothing; a Hive object made without
    // registering functions keeps it from opening a metastore.
    Hive.getWithoutRegisterFns(c);
    ZooKeeperHiveLockManager m = new ZooKeeperHiveLockManager();
    m.setContext(new HiveLockManagerCtx(c));
    if (manager != null) {
      for (List<HiveLock> group : held.values()) {
        manager.releaseLocks(group);
      }
    }
    held.clear();
    conf = c;
    manager = m;
  }

  /** db, db@t, db@t@k=v/k2=v2 -> Hive's path names (the partition name is one element). */
  private static String[] paths(String displayName) {
    return displayName.split("@", 3);
  }

  private HiveLockObject object(String displayName, String lockType) {
    HiveLockObjectData data = new HiveLockObjectData(
        queryId, String.valueOf(System.currentTimeMillis()), lockType, queryStr);
    return new HiveLockObject(paths(displayName), data);
  }

  private static HiveLockMode mode(String text) {
    return HiveLockMode.valueOf(text.trim().toUpperCase());
  }

  private static String lockType(String[] words, int index) {
    if (words.length <= index) {
      return "IMPLICIT";
    }
    String t = words[index].trim().toUpperCase();
    if (!t.equals("IMPLICIT") && !t.equals("EXPLICIT")) {
      throw new IllegalArgumentException("lock type must be IMPLICIT or EXPLICIT: " + words[index]);
    }
    return t;
  }

  private static String field(String value) {
    if (value == null) {
      return "\\N";
    }
    return value.replace('\t', ' ').replace('\n', ' ').replace('\r', ' ');
  }

  private String handle(String line) throws Exception {
    String[] words = line.trim().split("\\s+");
    String cmd = words[0].toUpperCase();
    switch (cmd) {
      case "PING":
        return "OK";
      case "NAMESPACE":
        useNamespace(words[1]);
        return "OK";
      case "QUERY": {
        String rest = line.trim().substring(words[0].length()).trim();
        int space = rest.indexOf(' ');
        queryId = space < 0 ? rest : rest.substring(0, space);
        queryStr = space < 0 ? "" : rest.substring(space + 1);
        return "OK";
      }
      case "LOCK": {
        String type = lockType(words, 3);
        HiveLockObject obj = object(words[1], type);
        HiveLockMode m = mode(words[2]);
        ZooKeeperHiveLock lock = manager.lock(obj, m, type.equals("EXPLICIT"));
        if (lock == null) {
          return "REFUSED Unable to acquire " + type + ", " + m + " lock " + obj.getDisplayName();
        }
        int group = nextGroup++;
        held.put(group, new ArrayList<>(List.of(lock)));
        return "OK " + group + " " + lock.getPath();
      }
      case "LOCKSET": {
        String type = lockType(words, 2);
        List<HiveLockObj> objs = new ArrayList<>();
        for (String item : words[1].split(",")) {
          int colon = item.lastIndexOf(':');
          objs.add(new HiveLockObj(object(item.substring(0, colon), type),
              mode(item.substring(colon + 1))));
        }
        List<HiveLock> locks = manager.lock(objs, type.equals("EXPLICIT"), null);
        if (locks == null) {
          return "REFUSED Unable to acquire the lock set " + words[1];
        }
        int group = nextGroup++;
        held.put(group, new ArrayList<>(locks));
        return "OK " + group + " " + locks.size();
      }
      case "RELEASE": {
        List<HiveLock> group = held.remove(Integer.parseInt(words[1]));
        if (group == null) {
          return "OK 0";
        }
        manager.releaseLocks(group);
        return "OK " + group.size();
      }
      case "UNLOCK":
      case "UNLOCKALL": {
        String name = cmd.equals("UNLOCK") ? words[1] : null;
        List<HiveLock> mine = new ArrayList<>();
        for (List<HiveLock> group : held.values()) {
          for (Iterator<HiveLock> it = group.iterator(); it.hasNext(); ) {
            HiveLock l = it.next();
            if (name == null || l.getHiveLockObject().getDisplayName().equals(name)) {
              mine.add(l);
              it.remove();
            }
          }
        }
        held.values().removeIf(List::isEmpty);
        manager.releaseLocks(mine);
        return "OK " + mine.size();
      }
      case "UNLOCKANY": {
        HiveLockObject key = new HiveLockObject(paths(words[1]), null);
        List<HiveLock> locks = manager.getLocks(key, false, false);
        if (locks == null || locks.isEmpty()) {
          return "NOTLOCKED";
        }
        for (HiveLock l : locks) {
          manager.unlock(l);
        }
        List<String> gone = new ArrayList<>();
        for (HiveLock l : locks) {
          gone.add(((ZooKeeperHiveLock) l).getPath());
        }
        for (List<HiveLock> group : held.values()) {
          group.removeIf(h -> gone.contains(((ZooKeeperHiveLock) h).getPath()));
        }
        held.values().removeIf(List::isEmpty);
        return "OK " + locks.size();
      }
      case "SHOW": {
        List<HiveLock> locks = words.length > 1
            ? manager.getLocks(new HiveLockObject(paths(words[1]), null), false, true)
            : manager.getLocks(false, true);
        StringBuilder b = new StringBuilder();
        for (HiveLock l : locks) {
          HiveLockObjectData d = l.getHiveLockObject().getData();
          b.append(field(l.getHiveLockObject().getDisplayName())).append('\t')
              .append(l.getHiveLockMode()).append('\t')
              .append(field(d == null ? null : d.getQueryId())).append('\t')
              .append(field(d == null ? null : d.getLockMode())).append('\t')
              .append(field(d == null ? null : d.getQueryStr())).append('\t')
              .append(field(d == null ? null : d.getClientIp())).append('\t')
              .append(field(d == null ? null : d.getLockTime())).append('\t')
              .append(field(((ZooKeeperHiveLock) l).getPath())).append('\n');
        }
        return b.append("END").toString();
      }
      default:
        return "ERROR unknown command " + cmd;
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: HiveLockHarness <host:port> <namespace>");
      System.exit(2);
    }
    // Answers go to the real stdout; whatever the libraries print goes to stderr.
    PrintStream out = new PrintStream(
        new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8.name());
    System.setOut(System.err);
    HiveLockHarness h = new HiveLockHarness(out, args[0]);
    h.useNamespace(args[1]);
    out.println("READY");
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      if (line.trim().isEmpty()) {
        continue;
      }
      if (line.trim().equalsIgnoreCase("QUIT")) {
        break;
      }
      String answer;
      try {
        answer = h.handle(line);
      } catch (Throwable t) {
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) {
          root = root.getCause();
        }
        t.printStackTrace();
        answer = "ERROR " + field(t.getClass().getSimpleName() + ": " + t.getMessage()
            + (root != t ? " (caused by " + root.getClass().getSimpleName() + ": "
                + root.getMessage() + ")" : ""));
      }
      out.println(answer);
    }
    CuratorFrameworkSingleton.closeAndReleaseInstance();
    out.println("BYE");
    out.flush();
    System.exit(0);
  }
}
