// jvm-curator: Apache Curator's InterProcessMutex (pinned in pom.xml), the protocol in
// adapters/PROTOCOL.md (Protocol.java). One CuratorFramework per process; its ZooKeeper session is every
// lock's lease and the client's heartbeats are the renewal, which Curator does not expose: no `renewed`
// events (`renew_events: false`). Curator tells its user when the connection state changes: LOST (the
// session expired, or the connection was gone for the session timeout) loses every held lock and is sent
// as `lost` (`lost_signal: true`); SUSPENDED is sent as `renew_failed`. Both go only to leases already
// granted (an acquire still in flight learns from its own outcome). A lock node deleted behind the
// holder's back goes unnoticed: Curator watches the session, not its own node. InterProcessMutex is
// re-entrant per thread and must be released by the thread that acquired it, so each lease lives on its
// own thread and re-entrancy is not offered. No fencing token. Setting: `session_timeout_ms` (default
// 60000, Curator's default).
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorAdapter implements Protocol.Library {
  /** Granted leases, each with the queue its holding thread takes the release request's id from. */
  private final Map<String, SynchronousQueue<Long>> held = new ConcurrentHashMap<>();
  private CuratorFramework client;

  public static void main(String[] args) throws Exception {
    Protocol.serve(new CuratorAdapter());
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
    client.getConnectionStateListenable().addListener((c, state) -> {
      for (String lease : held.keySet()) {
        if (state == ConnectionState.LOST) {
          Protocol.lost(lease, "session_expired", "Curator connection LOST");
        } else if (state == ConnectionState.SUSPENDED) {
          Protocol.renewFailed(lease, "Curator connection SUSPENDED");
        }
      }
    });
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

  /** Runs on the lease's own thread: acquire, wait for the release request, release. */
  @Override
  public void acquire(long id, JsonNode req) throws Exception {
    if (!"watchdog".equals(req.path("lease").path("mode").asText())) {
      Protocol.error(id, "unsupported", "ZooKeeper has no fixed leases (the session is the lease)");
      return;
    }
    InterProcessMutex mutex = new InterProcessMutex(client, "/lockbench/" + req.path("key").asText());
    if (!mutex.acquire(Protocol.waitMs(req), TimeUnit.MILLISECONDS)) {
      Protocol.error(id, "timeout", req.path("key").asText() + " is held");
      return;
    }
    String lease = Protocol.newLease();
    SynchronousQueue<Long> release = new SynchronousQueue<>();
    synchronized (Protocol.class) { // the reply goes out before any event of the lease
      Protocol.granted(id, lease);
      held.put(lease, release);
    }
    long releaseId = release.take();
    try {
      mutex.release();
      Protocol.write(Protocol.ok(releaseId));
    } catch (IllegalMonitorStateException e) {
      Protocol.error(releaseId, "not_held", e.getMessage());
    } catch (Exception e) {
      Protocol.error(releaseId, "backend", e.toString());
    }
  }

  @Override
  public void release(long id, String lease) throws InterruptedException {
    SynchronousQueue<Long> release;
    synchronized (Protocol.class) {
      release = held.remove(lease);
    }
    if (release == null) {
      Protocol.error(id, "not_held", "unknown lease " + lease);
    } else {
      release.put(id);
    }
  }
}
