// What the ShedLock rows share (jvm-shedlock-jdbc: ShedLockJdbcAdapter.java; jvm-shedlock-redis:
// ShedLockRedisAdapter.java): ShedLock (net.javacrumbs.shedlock, pinned in pom.xml's profiles of the same
// names), the lock many Java teams put on their scheduled jobs, speaking adapters/PROTOCOL.md
// (Protocol.java). Each protocol client gets a provider of its own, as one service instance has its own
// LockProvider bean.
//
// ShedLock's own defaults and what this adapter adds:
// - A fixed lease is `lockAtMostFor` (the lease's TTL) with `lockAtLeastFor` zero: the lock is released at
//   unlock, or expires after lockAtMostFor if the holder never unlocks.
// - A watchdog lease is the same provider wrapped in KeepAliveLockProvider on a single-thread scheduler (the
//   README: "single thread should be enough"), which extends the lock every lockAtMostFor / 2. The library
//   refuses a lockAtMostFor under 30 s ("Does not support lockAtMostFor shorter than 30s"); that refusal is
//   passed on as a `config` error in the library's words, so a case asking for a shorter watchdog TTL fails
//   with them rather than running something the library does not do.
// - ShedLock does not wait: a held lock makes `lock()` return empty ("execution on other nodes does not
//   wait, it is simply skipped"). A protocol acquire that may wait tries again every POLL until its wait
//   passes, as a caller looping over `lock()` would; `wait_notify: false`.
// - The lock records who holds it by `lockedBy`, the host name by default. Every protocol client stands for
//   a separate service instance, which in production runs on a host of its own, so each client's
//   JdbcTemplateLockProvider is given `withLockedByValue(<host name>-<client number>)`: with the shared
//   default, one client's unlock could free another's lock only because lockbench runs them on one host.
//   The Redis provider keeps its defaults: its unlock deletes the key without checking who holds it
//   (`safeUpdate` is off by default), and its extension sets the key if present, whoever holds it.
// - ShedLock tells its user of no loss, gives no fencing token, is not re-entrant, and its unlock returns
//   nothing: a release of a lease that had already expired answers ok, as the library cannot tell.
import com.fasterxml.jackson.databind.JsonNode;
import java.io.InputStream;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.support.KeepAliveLockProvider;

abstract class ShedLockPeer implements Protocol.Library {
  /** How often a waiting acquire tries `lock()` again (ShedLock itself never waits). */
  private static final long POLL_MS = 100;

  /** Unlocks run here, off the reading thread. */
  private static final ExecutorService RELEASES = Executors.newCachedThreadPool(run -> {
    Thread t = new Thread(run, "release");
    t.setDaemon(true);
    return t;
  });

  private final Map<String, SimpleLock> held = new ConcurrentHashMap<>();
  private ExtensibleLockProvider plain;
  private LockProvider keepAlive;
  private ScheduledExecutorService extender;
  /** What close() shuts: the provider's connections. */
  protected AutoCloseable connections;

  /** The adapter id (`jvm-shedlock-...`). */
  protected abstract String adapter();

  /** The provider's Maven artifact, whose version hello reports. */
  protected abstract String artifact();

  /**
   * The provider for one client on the server at url (user: its user and password, when given), or a
   * `config` error already replied to request id and null.
   */
  protected abstract ExtensibleLockProvider connect(long id, URI url, String[] user) throws Exception;

  @Override
  public void hello(long id, JsonNode config) throws Exception {
    URI url = URI.create(config.path("servers").path(0).asText());
    String[] user = url.getUserInfo() == null ? new String[0] : url.getUserInfo().split(":", 2);
    // A server's password comes in the environment, never in hello's address (adapters/PROTOCOL.md).
    String password = System.getenv("LOCKBENCH_SERVER_PASSWORD");
    if (user.length == 1 && password != null) {
      user = new String[] {user[0], password};
    }
    try {
      plain = connect(id, url, user);
    } catch (Exception e) {
      Protocol.error(id, "backend", "no connection to " + url.getHost() + ":" + url.getPort() + ": "
          + e.toString().replace('\n', ' '));
      return;
    }
    if (plain == null) {
      return;
    }
    extender = Executors.newSingleThreadScheduledExecutor(run -> {
      Thread t = new Thread(run, "shedlock-keep-alive");
      t.setDaemon(true);
      return t;
    });
    keepAlive = new KeepAliveLockProvider(plain, extender);
    var reply = Protocol.hello(id, adapter(), "ShedLock " + artifact(), version(artifact()));
    reply.putObject("capabilities").put("reentrant", false).put("fencing", false)
        .put("auto_renew", true).put("fixed_lease", true).put("wait_notify", false)
        .put("lost_signal", false).put("hold_identity", false).put("renew_events", false)
        .put("min_ttl_ms", 1).put("ttl_granularity_ms", 1);
    Protocol.write(reply);
  }

  /** The version of a ShedLock artifact on the classpath, from its Maven metadata. */
  private static String version(String artifact) throws Exception {
    try (InputStream in = ShedLockPeer.class.getResourceAsStream(
        "/META-INF/maven/net.javacrumbs.shedlock/" + artifact + "/pom.properties")) {
      if (in == null) {
        return "unknown";
      }
      Properties properties = new Properties();
      properties.load(in);
      return properties.getProperty("version", "unknown");
    }
  }

  @Override
  public void acquire(long id, JsonNode req) throws Exception {
    String key = req.path("key").asText();
    JsonNode lease = req.path("lease");
    boolean watchdog = "watchdog".equals(lease.path("mode").asText());
    Duration lockAtMostFor = Duration.ofMillis(lease.path("ttl_ms").asLong());
    LockProvider locks = watchdog ? keepAlive : plain;
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Protocol.waitMs(req));
    while (true) {
      long sent = Protocol.now();
      Optional<SimpleLock> lock;
      try {
        lock = locks.lock(new LockConfiguration(ClockProvider.now(), key, lockAtMostFor, Duration.ZERO));
      } catch (IllegalArgumentException e) {
        // KeepAliveLockProvider's refusal of a lockAtMostFor under 30 s.
        Protocol.error(id, "config", e.getMessage());
        return;
      } catch (Exception e) {
        Protocol.error(id, "backend", e.toString().replace('\n', ' '));
        return;
      }
      if (lock.isPresent()) {
        String leaseId = Protocol.newLease();
        held.put(leaseId, lock.get());
        Protocol.write(Protocol.ok(id).put("lease", leaseId).putNull("token").put("sent", sent));
        return;
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        Protocol.error(id, "timeout", key + " is held");
        return;
      }
      TimeUnit.NANOSECONDS.sleep(Math.min(left, TimeUnit.MILLISECONDS.toNanos(POLL_MS)));
    }
  }

  @Override
  public void release(long id, String lease) {
    SimpleLock lock = held.remove(lease);
    if (lock == null) {
      Protocol.error(id, "not_held", "no lease " + lease);
      return;
    }
    RELEASES.execute(() -> {
      try {
        lock.unlock();
        Protocol.write(Protocol.ok(id));
      } catch (Exception e) {
        Protocol.error(id, "backend", e.toString().replace('\n', ' '));
      }
    });
  }

  @Override
  public void close() throws Exception {
    if (extender != null) {
      extender.shutdownNow();
    }
    if (connections != null) {
      connections.close();
    }
  }
}
