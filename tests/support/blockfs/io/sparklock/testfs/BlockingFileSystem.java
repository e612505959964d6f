package io.sparklock.testfs;

import java.io.IOException;
import java.net.URI;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;

/**
 * The local file system under the scheme {@code blockfs}, which can hold one delete or rename
 * until the test releases it: the tests of the destructive steps (tests/test_fencing_destructive.py)
 * let a statement's lease lapse while it sits inside such a step, then let it go on.
 *
 * <p>Controlled from the test through py4j: {@link #hold} arms it (the first call of that kind on
 * a path matching the pattern blocks), {@link #held} says which path is being held, {@link
 * #release} lets it go. One hold at a time; every other call passes through at once.
 */
public class BlockingFileSystem extends RawLocalFileSystem {
  public static final String SCHEME = "blockfs";
  private static final URI NAME = URI.create(SCHEME + ":///");

  /** Statuses come from here: the raw local one loads owners through file: URIs only. */
  private final RawLocalFileSystem local = new RawLocalFileSystem();

  private static volatile String holdOp;
  private static volatile Pattern holdPath;
  private static volatile CountDownLatch gate = new CountDownLatch(0);
  private static volatile String heldPath;
  private static final StringBuilder LOG = new StringBuilder();

  public BlockingFileSystem() {}

  /** Arms the hold: the next {@code op} ("delete" or "rename": its source) on a matching path. */
  public static synchronized void hold(String op, String pathRegex) {
    gate.countDown();
    holdOp = op;
    holdPath = Pattern.compile(pathRegex);
    heldPath = null;
    gate = new CountDownLatch(1);
  }

  /** The path being held now, or null. */
  public static String held() {
    return heldPath;
  }

  /** Lets the held call (and any later one) go on; disarms. */
  public static synchronized void release() {
    holdOp = null;
    gate.countDown();
  }

  /** Every delete and rename seen since the JVM started, one a line (for failure messages). */
  public static String calls() {
    synchronized (LOG) {
      return LOG.toString();
    }
  }

  private static void maybeHold(String op, Path path) throws IOException {
    synchronized (LOG) {
      LOG.append(op).append(' ').append(path).append('\n');
    }
    CountDownLatch latch;
    synchronized (BlockingFileSystem.class) {
      Pattern p = holdPath;
      if (!op.equals(holdOp) || p == null || !p.matcher(path.toString()).find()) {
        return;
      }
      holdOp = null; // the first match only
      heldPath = path.toString();
      latch = gate;
    }
    try {
      if (!latch.await(120, TimeUnit.SECONDS)) {
        throw new IOException("blockfs: held " + op + " of " + path + " never released");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("blockfs: interrupted while holding " + path, e);
    } finally {
      heldPath = null;
    }
  }

  @Override
  public URI getUri() {
    return NAME;
  }

  @Override
  public String getScheme() {
    return SCHEME;
  }

  @Override
  public void initialize(URI uri, Configuration conf) throws IOException {
    super.initialize(uri, conf);
    local.initialize(URI.create("file:///"), conf);
  }

  @Override
  public FileStatus getFileStatus(Path p) throws IOException {
    return ours(local.getFileStatus(theirs(p)));
  }

  @Override
  public FileStatus[] listStatus(Path p) throws IOException {
    FileStatus[] found = local.listStatus(theirs(p));
    FileStatus[] mapped = new FileStatus[found.length];
    for (int i = 0; i < found.length; i++) {
      mapped[i] = ours(found[i]);
    }
    return mapped;
  }

  private Path theirs(Path p) {
    return new Path("file", null, makeQualified(p).toUri().getPath());
  }

  private static FileStatus ours(FileStatus s) throws IOException {
    Path p = new Path(SCHEME, null, s.getPath().toUri().getPath());
    return new FileStatus(s.getLen(), s.isDirectory(), s.getReplication(), s.getBlockSize(),
        s.getModificationTime(), s.getAccessTime(), s.getPermission(), s.getOwner(),
        s.getGroup(), p);
  }

  @Override
  public boolean delete(Path p, boolean recursive) throws IOException {
    maybeHold("delete", p);
    return super.delete(p, recursive);
  }

  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    maybeHold("rename", src);
    return super.rename(src, dst);
  }
}
