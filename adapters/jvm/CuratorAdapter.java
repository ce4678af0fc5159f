// jvm-curator: Apache Curator's InterProcessMutex (Debian's libcurator-recipes-java), the protocol in
// adapters/PROTOCOL.md. One CuratorFramework per process; its ZooKeeper session is every lock's lease and
// the client's heartbeats are the renewal, which Curator does not expose: no `renewed` events
// (`renew_events: false`). Connection state LOST (session expired, or disconnected past the session
// timeout) loses every held lock; SUSPENDED is reported as `renew_failed`. InterProcessMutex is re-entrant
// per thread and must be released by the thread that acquired it, so each lease lives on its own thread
// and re-entrancy is not offered. A lock node deleted behind the holder's back goes unnoticed (no
// lost_signal). No fencing token. Setting: `session_timeout_ms` (default 60000, Curator's default).
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorAdapter {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long ORIGIN = System.nanoTime();
  private static final Map<String, SynchronousQueue<Long>> HELD = new ConcurrentHashMap<>();
  private static final AtomicLong NEXT_LEASE = new AtomicLong(1);
  private static CuratorFramework client;

  private static long now() {
    return System.nanoTime() - ORIGIN;
  }

  private static synchronized void write(ObjectNode message) {
    System.out.println(message.toString());
    System.out.flush();
  }

  private static ObjectNode ok(long id) {
    return JSON.createObjectNode().put("id", id).put("ok", true);
  }

  private static void error(long id, String kind, String message) {
    ObjectNode reply = JSON.createObjectNode().put("id", id).put("ok", false);
    reply.putObject("error").put("kind", kind).put("message", message);
    write(reply);
  }

  private static void event(String ev, String lease, String field, String value) {
    write(JSON.createObjectNode().put("ev", ev).put("lease", lease).put("t", now()).put(field, value));
  }

  private static void hello(long id, JsonNode config) throws InterruptedException {
    StringBuilder servers = new StringBuilder();
    for (JsonNode s : config.path("servers")) {
      servers.append(servers.length() == 0 ? "" : ",").append(s.asText());
    }
    int session = Integer.parseInt(config.path("session_timeout_ms").asText("60000"));
    client = CuratorFrameworkFactory.newClient(
        servers.toString(), session, 15000, new ExponentialBackoffRetry(100, 3));
    client.getConnectionStateListenable().addListener((c, state) -> {
      for (String lease : HELD.keySet()) {
        if (state == ConnectionState.LOST) {
          ObjectNode lost = JSON.createObjectNode().put("ev", "lost").put("lease", lease).put("t", now());
          write(lost.put("reason", "session_expired").put("detail", "Curator connection LOST"));
        } else if (state == ConnectionState.SUSPENDED) {
          event("renew_failed", lease, "error", "Curator connection SUSPENDED");
        }
      }
    });
    client.start();
    if (!client.blockUntilConnected(15, TimeUnit.SECONDS)) {
      error(id, "backend", "no ZooKeeper connection to " + servers + " within 15 s");
      return;
    }
    ObjectNode reply = ok(id).put("protocol", 1).put("adapter", "jvm-curator")
        .put("library", "Apache Curator InterProcessMutex")
        .put("version", CuratorFramework.class.getPackage().getImplementationVersion());
    reply.putObject("capabilities").put("reentrant", false).put("fencing", false)
        .put("auto_renew", true).put("fixed_lease", false).put("wait_notify", true)
        .put("lost_signal", false).put("hold_identity", true).put("renew_events", false).put("min_ttl_ms", 1)
        .put("ttl_granularity_ms", 1);
    write(reply);
  }

  /** Runs on the lease's own thread: acquire, wait for the release request, release. */
  private static void hold(long id, JsonNode req) {
    if (!"watchdog".equals(req.path("lease").path("mode").asText())) {
      error(id, "unsupported", "ZooKeeper has no fixed leases (the session is the lease)");
      return;
    }
    InterProcessMutex mutex = new InterProcessMutex(client, "/lockbench/" + req.path("key").asText());
    String lease = "L" + NEXT_LEASE.getAndIncrement();
    SynchronousQueue<Long> release = new SynchronousQueue<>();
    try {
      long waitMs = req.path("wait_ms").isNull() ? 0 : req.path("wait_ms").asLong();
      HELD.put(lease, release);
      if (!mutex.acquire(waitMs, TimeUnit.MILLISECONDS)) {
        HELD.remove(lease);
        error(id, "timeout", req.path("key").asText() + " is held");
        return;
      }
      write(ok(id).put("lease", lease).putNull("token"));
      long releaseId = release.take();
      try {
        mutex.release();
        write(ok(releaseId));
      } catch (IllegalMonitorStateException e) {
        error(releaseId, "not_held", e.getMessage());
      }
    } catch (Exception e) {
      HELD.remove(lease);
      error(id, "backend", e.toString());
    }
  }

  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      if (line.isBlank()) {
        continue;
      }
      JsonNode req = JSON.readTree(line);
      long id = req.path("id").asLong();
      switch (req.path("op").asText()) {
        case "hello" -> hello(id, req.path("config"));
        case "ping" -> write(ok(id).put("t", now()));
        case "acquire" -> new Thread(() -> hold(id, req)).start();
        case "release" -> {
          SynchronousQueue<Long> release = HELD.remove(req.path("lease").asText());
          if (release == null) {
            error(id, "not_held", "unknown lease " + req.path("lease").asText());
          } else {
            release.put(id);
          }
        }
        case "close" -> {
          write(ok(id));
          System.exit(0);
        }
        default -> error(id, "unsupported", "unknown op " + req.path("op").asText());
      }
    }
    System.exit(0);
  }
}
