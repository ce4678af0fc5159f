// jvm-redisson-3.43, jvm-redisson, jvm-redisson-4: Redisson's RLock (the version pinned in pom.xml's
// profile of the row named by the first argument), the protocol in adapters/PROTOCOL.md (Protocol.java).
//
// One RedissonClient per protocol client, every client of a case in one JVM (Protocol.serveClients,
// `multi_client`), each client its own RedissonClient as each was its own process before (useSingleServer(), the first address in `servers`; with a `replicas`
// setting, a comma-separated list of `redis://` addresses, useMasterSlaveServers() with that address as
// master and those as slaves, so that each lock write is followed by WAIT as it is for users with
// replicas; `slaves_sync_timeout_ms` sets slavesSyncTimeout), configured from
// hello's settings as lockbench's Redisson rows are: `lock_watchdog_timeout_ms` (lockWatchdogTimeout,
// the run's TTL), `timeout_ms` (timeout) and `retry_interval_ms` (retryInterval; versions with a
// retryDelay strategy keep their default strategy, its delays scaled by retry_interval_ms over the
// default retryInterval). retryAttempts stays the library's default. Lock names are lockbench's
// (`lockbench:{key}`).
//
// Redisson ties a hold to its connection manager's id and the Java thread that locked it, so each
// protocol `owner` is one Java thread of its own while it has an acquire or a hold (OwnerThreads): the
// same owner locks and unlocks on the same thread,
// and re-entry counts as it does in Redisson (`reentrant: true`; a release names only the owner,
// `hold_identity: false`). An owner's requests therefore run one after another, as a thread's would.
// Watchdog leases: tryLock() / tryLock(wait) without a lease time (the watchdog renews every
// lockWatchdogTimeout / 3); fixed leases: tryLock(wait, lease). Waiters are woken by the unlock message
// (pub/sub, `wait_notify`). Redisson exposes neither its renewals (`renew_events: false`) nor a lost
// lock: it logs a failed renewal and tells the holder nothing (`lost_signal: false`), so this adapter
// sends no events at all. No fencing token.
//
// `starve` (a CPU starvation of the library, declared as the `starve` capability) blocks every thread
// Redisson renews a lock on, as user code that blocks them does: each event loop of the client's Netty
// EventLoopGroup (renewal commands are written and their replies completed there) and the timer thread
// of its HashedWheelTimer (the watchdog schedules each renewal on it: 3.43's renewExpiration and the
// 3.44+ LockRenewalScheduler alike), both ServiceManager's (getGroup, getTimer) in 3.43, 3.52 and 4.7.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.util.concurrent.EventExecutor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.BaseConfig;
import org.redisson.config.Config;
import org.redisson.config.MasterSlaveServersConfig;
import org.redisson.connection.ServiceManager;

public final class RedissonAdapter implements Protocol.Library {
  private record Hold(RLock lock, OwnerThreads.Owner owner) {}

  private final String row;
  private final OwnerThreads owners = new OwnerThreads();
  private final Map<String, Hold> leases = new ConcurrentHashMap<>();
  private RedissonClient client;
  private long watchdogMs;

  private RedissonAdapter(String row) {
    this.row = row;
  }

  public static void main(String[] args) throws Exception {
    Protocol.serveClients(() -> new RedissonAdapter(args[0]));
  }

  /** Shuts this client's RedissonClient down (its watchdog stops; held locks are left to expire). */
  @Override
  public void close() {
    if (client != null) {
      client.shutdown();
    }
  }

  @Override
  public void hello(long id, JsonNode config) throws Exception {
    watchdogMs = Long.parseLong(config.path("lock_watchdog_timeout_ms").asText("30000"));
    Config redisson = new Config().setLockWatchdogTimeout(watchdogMs);
    String primary = config.path("servers").path(0).asText();
    BaseConfig<?> server;
    if (config.has("replicas")) {
      MasterSlaveServersConfig replicated = redisson.useMasterSlaveServers().setMasterAddress(primary);
      for (String replica : config.path("replicas").asText().split(",")) {
        replicated.addSlaveAddress(replica.trim());
      }
      server = replicated;
    } else {
      server = redisson.useSingleServer().setAddress(primary);
    }
    if (config.has("slaves_sync_timeout_ms")) {
      redisson.setSlavesSyncTimeout(Long.parseLong(config.path("slaves_sync_timeout_ms").asText()));
    }
    if (config.has("timeout_ms")) {
      server.setTimeout(Integer.parseInt(config.path("timeout_ms").asText()));
    }
    if (config.has("retry_interval_ms")) {
      setRetryInterval(server, Integer.parseInt(config.path("retry_interval_ms").asText()));
    }
    client = Redisson.create(redisson);
    ObjectNode reply = Protocol.hello(id, row, "Redisson RLock", version());
    reply.putObject("capabilities").put("reentrant", true).put("fencing", false)
        .put("auto_renew", true).put("fixed_lease", true).put("wait_notify", true)
        .put("lost_signal", false).put("hold_identity", false).put("renew_events", false)
        .put("min_ttl_ms", 1).put("ttl_granularity_ms", 1).put("starve", true);
    Protocol.write(reply);
  }

  /** Holds each event loop of the client's EventLoopGroup and its timer thread for forMs. */
  @Override
  public void starve(long id, long forMs) throws InterruptedException {
    ServiceManager service = ((Redisson) client).getServiceManager();
    List<Consumer<Runnable>> runners = new ArrayList<>();
    for (EventExecutor loop : service.getGroup()) {
      runners.add(loop::execute);
    }
    runners.add(task -> service.getTimer().newTimeout(timeout -> task.run(), 0, TimeUnit.MILLISECONDS));
    Protocol.holdThreads(id, forMs, runners);
  }

  /**
   * Sets the pause before a retry. Up to 3.4x that is retryInterval; later versions default to a
   * jittered retryDelay strategy (EqualJitterDelay), whose delays are scaled by the same factor.
   */
  private static void setRetryInterval(BaseConfig<?> server, int ms) throws Exception {
    int defaultMs = server.getRetryInterval();
    Object delay;
    try {
      delay = server.getClass().getMethod("getRetryDelay").invoke(server);
    } catch (NoSuchMethodException e) {
      server.setRetryInterval(ms);
      return;
    }
    Class<?> jitter = Class.forName("org.redisson.config.EqualJitterDelay");
    if (!jitter.isInstance(delay)) {
      server.setRetryInterval(ms);
      return;
    }
    Duration base = (Duration) jitter.getMethod("getBaseDelay").invoke(delay);
    Duration max = (Duration) jitter.getMethod("getMaxDelay").invoke(delay);
    Object scaled = jitter.getConstructor(Duration.class, Duration.class)
        .newInstance(base.multipliedBy(ms).dividedBy(defaultMs), max.multipliedBy(ms).dividedBy(defaultMs));
    Class<?> strategy = Class.forName("org.redisson.config.DelayStrategy");
    server.getClass().getMethod("setRetryDelay", strategy).invoke(server, scaled);
  }

  /**
   * The exception with its causes: Redisson wraps a failed command's own error (such as "None of
   * slaves were synced") in "Unexpected exception while processing command".
   */
  private static String describe(Throwable e) {
    StringBuilder text = new StringBuilder(e.toString());
    Throwable cause = e.getCause();
    for (int depth = 0; cause != null && depth < 5; depth++, cause = cause.getCause()) {
      text.append("; caused by ").append(cause);
    }
    return text.toString();
  }

  private static String version() {
    String version = Redisson.class.getPackage().getImplementationVersion();
    return version != null ? version : "unknown";
  }

  @Override
  public void acquire(long id, JsonNode req) {
    owners.acquire(req.path("owner").asText(), id, owner -> lock(id, req, owner),
        RedissonAdapter::describe);
  }

  /** Runs on the owner's thread; true when the lock was granted (the hold keeps the owner). */
  private boolean lock(long id, JsonNode req, OwnerThreads.Owner owner) throws InterruptedException {
    String key = req.path("key").asText();
    RLock lock = client.getLock("lockbench:{" + key + "}");
    JsonNode lease = req.path("lease");
    long ttl = lease.path("ttl_ms").asLong();
    boolean won;
    if ("watchdog".equals(lease.path("mode").asText())) {
      if (ttl != watchdogMs) {
        Protocol.error(id, "config", "a watchdog lease lasts lockWatchdogTimeout (" + watchdogMs
            + " ms, set for the client), not " + ttl + " ms");
        return false;
      }
      won = req.path("wait_ms").isNull()
          ? lock.tryLock()
          : lock.tryLock(Protocol.waitMs(req), TimeUnit.MILLISECONDS);
    } else {
      won = lock.tryLock(Protocol.waitMs(req), ttl, TimeUnit.MILLISECONDS);
    }
    if (!won) {
      Protocol.error(id, "timeout", key + " is held");
      return false;
    }
    String leaseId = Protocol.newLease();
    leases.put(leaseId, new Hold(lock, owner));
    Protocol.granted(id, leaseId);
    return true;
  }

  @Override
  public void release(long id, String lease) {
    Hold hold = leases.remove(lease);
    if (hold == null) {
      Protocol.error(id, "not_held", "unknown lease " + lease);
      return;
    }
    hold.owner.thread.execute(() -> {
      boolean clean = false;
      try {
        hold.lock.unlock();
        clean = true;
        Protocol.write(Protocol.ok(id));
      } catch (IllegalMonitorStateException e) {
        clean = true;
        Protocol.error(id, "not_held", e.getMessage());
      } catch (Exception e) {
        Protocol.error(id, "backend", describe(e));
      } finally {
        owners.leave(hold.owner, clean);
      }
    });
  }
}
