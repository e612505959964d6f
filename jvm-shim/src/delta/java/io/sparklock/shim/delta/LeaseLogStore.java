package io.sparklock.shim.delta;

import io.delta.storage.CloseableIterator;
import io.delta.storage.LogStore;
import io.sparklock.shim.lease.Lease;
import java.io.IOException;
import java.util.Iterator;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;

/**
 * A Delta {@code LogStore} that checks the lease right before a commit file is written
 * (docs/fencing.md): Delta makes a write visible by creating {@code _delta_log/<version>.json},
 * so that instant, on the committing thread, is where a statement whose ZooKeeper locks lapsed
 * must be stopped. Everything else goes to the store Delta would have used for the scheme (one
 * subclass per Delta default, chosen by {@code spark.delta.logStore.<scheme>.impl}, which
 * {@code sparklock.configure} sets only where the user set none).
 *
 * <p>Checkpoints, {@code _last_checkpoint} and checksums are not checked: they restate a version
 * already committed, and refusing them would report a visible commit as failed.
 */
public abstract class LeaseLogStore extends LogStore {
  private final LogStore delegate;

  protected LeaseLogStore(Configuration hadoopConf, LogStore delegate) {
    super(hadoopConf);
    this.delegate = delegate;
  }

  /** A commit file: {@code <20 digits>.json} directly in {@code _delta_log}, never replaced. */
  static boolean isCommit(Path path, boolean overwrite) {
    Path parent = path.getParent();
    if (overwrite || parent == null || !"_delta_log".equals(parent.getName())) {
      return false;
    }
    String name = path.getName();
    if (name.length() != 25 || !name.endsWith(".json")) {
      return false;
    }
    for (int i = 0; i < 20; i++) {
      if (!Character.isDigit(name.charAt(i))) {
        return false;
      }
    }
    return true;
  }

  @Override
  public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration conf)
      throws IOException {
    if (isCommit(path, Boolean.TRUE.equals(overwrite))) {
      Lease.checkCommit("the Delta log commit " + path);
    }
    delegate.write(path, actions, overwrite, conf);
  }

  @Override
  public CloseableIterator<String> read(Path path, Configuration conf) throws IOException {
    return delegate.read(path, conf);
  }

  @Override
  public Iterator<FileStatus> listFrom(Path path, Configuration conf) throws IOException {
    return delegate.listFrom(path, conf);
  }

  @Override
  public Path resolvePathOnPhysicalStorage(Path path, Configuration conf) throws IOException {
    return delegate.resolvePathOnPhysicalStorage(path, conf);
  }

  @Override
  public Boolean isPartialWriteVisible(Path path, Configuration conf) throws IOException {
    return delegate.isPartialWriteVisible(path, conf);
  }
}
