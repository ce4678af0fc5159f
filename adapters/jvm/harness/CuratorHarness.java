// Curator's InterProcessMutex in the in-process harness (Harness.java), configured as the jvm-curator
// adapter configures it: newClient(--connect, session --session-ms, connection 15 s,
// ExponentialBackoffRetry(100, 3)). Each acquire is a new InterProcessMutex on /lockbench/<key>, as the
// adapter makes one per acquire; it is released on the thread that took it.
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorHarness implements Harness.Library<CuratorFramework, InterProcessMutex> {
  private final Map<String, String> flags;

  private CuratorHarness(Map<String, String> flags) {
    this.flags = flags;
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> flags = Harness.flags(args);
    System.err.println("Curator " + CuratorFramework.class.getPackage().getImplementationVersion());
    Harness.run(new CuratorHarness(flags), flags);
  }

  @Override
  public CuratorFramework connect() throws Exception {
    CuratorFramework client = CuratorFrameworkFactory.newClient(flags.get("connect"),
        (int) Harness.number(flags, "session-ms", 60_000), 15_000, new ExponentialBackoffRetry(100, 3));
    client.start();
    if (!client.blockUntilConnected(15, TimeUnit.SECONDS)) {
      throw new IllegalStateException("no ZooKeeper at " + flags.get("connect") + " within 15 s");
    }
    return client;
  }

  @Override
  public InterProcessMutex lock(CuratorFramework client, String key, long waitMs) throws Exception {
    InterProcessMutex mutex = new InterProcessMutex(client, "/lockbench/" + key.replaceAll("[{}:]", "_"));
    return mutex.acquire(waitMs, TimeUnit.MILLISECONDS) ? mutex : null;
  }

  @Override
  public void unlock(InterProcessMutex hold) throws Exception {
    hold.release();
  }

  @Override
  public void close(CuratorFramework client) {
    client.close();
  }
}
