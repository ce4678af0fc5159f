// jvm-spring-redis: Spring Integration's RedisLockRegistry (pinned in pom.xml's profile jvm-spring-redis)
// on one redis-server, the protocol in adapters/PROTOCOL.md (Protocol.java, LockRegistryPeer.java).
//
// One LettuceConnectionFactory per process (Spring Data Redis's, at its defaults, on the first address in
// `servers`), as the Redis Support docs create it. Two registries on it, both with registry key
// `lockbench` and the run's TTL as expireAfter (the library's default is 60 s), at their other defaults
// (RedisLockType.SPIN_LOCK: a waiter polls every idleBetweenTries, 100 ms, `wait_notify: false`):
// - watchdog leases: a registry given a renewal TaskScheduler (setRenewalTaskScheduler, since 6.4; a
//   ThreadPoolTaskScheduler at its defaults, one thread, as Spring Boot's default scheduler), which
//   renews each held lock every expireAfter / 3 until it is unlocked or a renewal finds the key no longer
//   ours; a renewal that throws is logged by the scheduler and tried again a period later;
// - fixed leases: a registry without one, `tryLock(wait, ttl)` with the lease's TTL.
// The lock is a string key `lockbench:<key>` holding the registry's client id, taken by a script (GET,
// then SET PX when free), renewed by `SET ... IFEQ` (Redis 8.4) or, after the first "syntax error" from
// an older server, a GET-and-PEXPIRE script; released by a GET-and-UNLINK script.
// RedisLockRegistry tells its user of no renewal and of no loss (`renew_events: false`,
// `lost_signal: false`): a lost lock shows only at unlock (ConcurrentModificationException, `not_held`).
// No fencing token.
import com.fasterxml.jackson.databind.JsonNode;
import java.net.URI;
import java.time.Duration;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.integration.redis.util.RedisLockRegistry;
import org.springframework.integration.support.locks.DistributedLock;
import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;

public final class SpringRedisAdapter extends LockRegistryPeer {
  private RedisLockRegistry renewing;
  private RedisLockRegistry fixed;
  private LettuceConnectionFactory connections;
  private ThreadPoolTaskScheduler scheduler;

  /** One registry pair (its own connection factory and client id) per protocol client, in this JVM. */
  public static void main(String[] args) throws Exception {
    Protocol.serveClients(SpringRedisAdapter::new);
  }

  @Override
  public void close() {
    if (scheduler != null) {
      scheduler.shutdown();
    }
    if (connections != null) {
      connections.destroy();
    }
  }

  @Override
  public void hello(long id, JsonNode config) {
    ttl = Duration.ofMillis(Long.parseLong(config.path("ttl_ms").asText("60000")));
    URI url = URI.create(config.path("servers").path(0).asText());
    connections =
        new LettuceConnectionFactory(new RedisStandaloneConfiguration(url.getHost(), url.getPort()));
    connections.afterPropertiesSet();
    connections.start();
    try {
      connections.getConnection().close();
    } catch (Exception e) {
      Protocol.error(id, "backend", "no Redis connection: " + describe(e));
      return;
    }
    scheduler = new ThreadPoolTaskScheduler();
    scheduler.setThreadNamePrefix("lock-renewal-");
    scheduler.initialize();
    renewing = new RedisLockRegistry(connections, "lockbench", ttl);
    renewing.setRenewalTaskScheduler(scheduler);
    fixed = new RedisLockRegistry(connections, "lockbench", ttl);
    var reply = Protocol.hello(id, "jvm-spring-redis", "Spring Integration RedisLockRegistry",
        RedisLockRegistry.class.getPackage().getImplementationVersion());
    reply.putObject("capabilities").put("reentrant", false).put("fencing", false)
        .put("auto_renew", true).put("fixed_lease", true).put("wait_notify", false)
        .put("lost_signal", false).put("hold_identity", true).put("renew_events", false)
        .put("min_ttl_ms", 1).put("ttl_granularity_ms", 1);
    Protocol.write(reply);
  }

  @Override
  protected DistributedLock lock(String key, boolean watchdog) {
    return (watchdog ? renewing : fixed).obtain(key);
  }

  /** The library renews by itself (the registry's TaskScheduler). */
  @Override
  protected Duration renewalPeriod() {
    return null;
  }

  @Override
  protected boolean renew(String key, String lease) {
    return true;
  }
}
