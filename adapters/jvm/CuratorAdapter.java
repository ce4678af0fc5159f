// jvm-curator: Apache Curator's InterProcessMutex (pinned in pom.xml), the protocol in
// adapters/PROTOCOL.md (Protocol.java). One CuratorFramework per protocol client, every client of a case
// in one JVM (Protocol.serveClients, `multi_client`); a client's ZooKeeper session is every
// lock's lease and the client's heartbeats are the renewal, which Curator does not expose: no `renewed`
// events (`renew_events: false`). Loss is handled as Curator's lock recipe documentation tells its users
// to: a ConnectionStateListener watches SUSPENDED and LOST, and a holder stops at the first of them,
// because after SUSPENDED the holder cannot be sure it still holds the lock unless RECONNECTED follows,
// and after LOST it surely does not. So both are sent as `lost` (`lost_signal: true`) to every lease
// already granted (an acquire still in flight learns from its own outcome; a grant that comes while the
// connection is suspended is lost at once). A RECONNECTED does not give a lost lease back: its task has
// stopped, its release is answered `not_held` at once, and the lock node is then deleted by Curator's
// release (a guaranteed delete, retried in the background until the connection returns). A lock node
// deleted behind the holder's back goes unnoticed: Curator watches the session, not its own node.
// InterProcessMutex is re-entrant per thread and must be released by the thread that acquired it, so
// each protocol `owner` is one Java thread while it has an acquire or a hold (OwnerThreads), which takes
// and releases every lock of that owner, as a service's worker thread would; each acquire makes its own
// InterProcessMutex, so re-entrancy is not offered. No fencing token. Setting:
// `session_timeout_ms` (default 60000, Curator's default).
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorAdapter implements Protocol.Library {
  /** A granted lease: its mutex, the owner whose thread holds it, and whether it was lost (a SUSPENDED
   * or LOST connection state came after the grant). */
  private record Hold(InterProcessMutex mutex, OwnerThreads.Owner owner, AtomicBoolean lost) {}

  /** Granted leases not yet released; guarded by Protocol.class with the grant and the loss events. */
  private final Map<String, Hold> held = new ConcurrentHashMap<>();
  /** Whether the last connection state was SUSPENDED or LOST (not yet RECONNECTED). */
  private volatile boolean suspended;
  private final OwnerThreads owners = new OwnerThreads();
  private CuratorFramework client;

  public static void main(String[] args) throws Exception {
    Protocol.serveClients(CuratorAdapter::new);
  }

  /** Closes this client's CuratorFramework (its session ends; its lock nodes go with it). */
  @Override
  public void close() {
    if (client != null) {
      client.close();
    }
  }

  @Override
  public void hello(long id, JsonNode config) throws InterruptedException {
    StringBuilder servers = new StringBuilder();
    for (JsonNode s : config.path("servers")) {
      servers.append(servers.length() == 0 ? "" : ",").append(s.asText());
    }
    int session = Integer.parseInt(config.path("session_timeout_ms").asText("60000"));
    client = CuratorFrameworkFactory.newClient(
        servers.toString(), session, 15000, new ExponentialBackoffRetry(100, 3));
    client.getConnectionStateListenable().addListener((c, state) -> onState(state));
    client.start();
    if (!client.blockUntilConnected(15, TimeUnit.SECONDS)) {
      Protocol.error(id, "backend", "no ZooKeeper connection to " + servers + " within 15 s");
      return;
    }
    ObjectNode reply = Protocol.hello(id, "jvm-curator", "Apache Curator InterProcessMutex",
        CuratorFramework.class.getPackage().getImplementationVersion());
    reply.putObject("capabilities").put("reentrant", false).put("fencing", false)
        .put("auto_renew", true).put("fixed_lease", false).put("wait_notify", true)
        .put("lost_signal", true).put("hold_identity", true).put("renew_events", false)
        .put("min_ttl_ms", 1).put("ttl_granularity_ms", 1);
    Protocol.write(reply);
  }

  /** SUSPENDED and LOST lose every granted lease (once each); RECONNECTED gives none back. */
  private void onState(ConnectionState state) {
    synchronized (Protocol.class) {
      suspended = state == ConnectionState.SUSPENDED || state == ConnectionState.LOST;
      if (suspended) {
        held.forEach((lease, hold) -> loseOnce(lease, hold, state));
      }
    }
  }

  private static void loseOnce(String lease, Hold hold, ConnectionState state) {
    if (hold.lost().compareAndSet(false, true)) {
      if (state == ConnectionState.LOST) {
        Protocol.lost(lease, "session_expired", "Curator connection LOST");
      } else {
        Protocol.lost(lease, "channel_closed",
            "Curator connection SUSPENDED: the lock may no longer be held (Curator's lock recipe docs)");
      }
    }
  }

  @Override
  public void acquire(long id, JsonNode req) {
    if (!"watchdog".equals(req.path("lease").path("mode").asText())) {
      Protocol.error(id, "unsupported", "ZooKeeper has no fixed leases (the session is the lease)");
      return;
    }
    owners.acquire(req.path("owner").asText(), id, owner -> lock(id, req, owner),
        Exception::toString);
  }

  /** Runs on the owner's thread; true when the lock was granted (the hold keeps the owner). */
  private boolean lock(long id, JsonNode req, OwnerThreads.Owner owner) throws Exception {
    String key = req.path("key").asText();
    InterProcessMutex mutex = new InterProcessMutex(client, "/lockbench/" + key);
    if (!mutex.acquire(Protocol.waitMs(req), TimeUnit.MILLISECONDS)) {
      Protocol.error(id, "timeout", key + " is held");
      return false;
    }
    String lease = Protocol.newLease();
    Hold hold = new Hold(mutex, owner, new AtomicBoolean());
    synchronized (Protocol.class) { // the reply goes out before any event of the lease
      Protocol.granted(id, lease);
      held.put(lease, hold);
      if (suspended) {
        loseOnce(lease, hold, ConnectionState.SUSPENDED);
      }
    }
    return true;
  }

  @Override
  public void release(long id, String lease) {
    Hold hold;
    synchronized (Protocol.class) {
      hold = held.remove(lease);
    }
    if (hold == null) {
      Protocol.error(id, "not_held", "unknown lease " + lease);
      return;
    }
    hold.owner().thread.execute(() -> {
      boolean clean = false;
      try {
        clean = unlock(id, lease, hold);
      } finally {
        owners.leave(hold.owner(), clean);
      }
    });
  }

  /** Runs on the owner's thread; true when no node of the hold can be left behind by this thread. */
  private static boolean unlock(long id, String lease, Hold hold) {
    if (hold.lost().get()) {
      // The task stopped at the loss; the node goes now or, if suspended, when the connection returns.
      Protocol.error(id, "not_held", lease + " was lost (connection SUSPENDED or LOST)");
      try {
        hold.mutex().release();
      } catch (Exception e) {
        System.err.println("releasing lost " + lease + " (Curator retries the delete): " + e);
      }
      return true;
    }
    try {
      hold.mutex().release();
      Protocol.write(Protocol.ok(id));
      return true;
    } catch (IllegalMonitorStateException e) {
      Protocol.error(id, "not_held", e.getMessage());
      return true;
    } catch (Exception e) {
      Protocol.error(id, "backend", e.toString());
      return false;
    }
  }
}
