// Redisson's RLock in the in-process harness (Harness.java), configured as the jvm-redisson* adapter
// rows configure it from hello: useSingleServer() at --address, lockWatchdogTimeout --watchdog-ms,
// timeout --timeout-ms and retryInterval --retry-interval-ms (versions with a retryDelay strategy get
// their default EqualJitterDelay scaled by retry-interval over the default retryInterval). Without the
// last two flags the library's own defaults stay. Locks: tryLock(wait) without a lease time, so the
// watchdog renews them, as the adapter's watchdog leases.
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.BaseConfig;
import org.redisson.config.Config;

public final class RedissonHarness implements Harness.Library<RedissonClient, RLock> {
  private final Map<String, String> flags;

  private RedissonHarness(Map<String, String> flags) {
    this.flags = flags;
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> flags = Harness.flags(args);
    System.err.println("Redisson " + Redisson.class.getPackage().getImplementationVersion());
    Harness.run(new RedissonHarness(flags), flags);
  }

  @Override
  public RedissonClient connect() throws Exception {
    Config config = new Config().setLockWatchdogTimeout(Harness.number(flags, "watchdog-ms", 30_000));
    BaseConfig<?> server = config.useSingleServer().setAddress(flags.get("address"));
    if (flags.containsKey("timeout-ms")) {
      server.setTimeout(Integer.parseInt(flags.get("timeout-ms")));
    }
    if (flags.containsKey("retry-interval-ms")) {
      retryEvery(server, Integer.parseInt(flags.get("retry-interval-ms")));
    }
    return Redisson.create(config);
  }

  /** The pause before a retry: retryInterval up to 3.4x, a scaled EqualJitterDelay after. */
  private static void retryEvery(BaseConfig<?> server, int ms) throws Exception {
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
    Object scaled = jitter.getConstructor(Duration.class, Duration.class).newInstance(
        base.multipliedBy(ms).dividedBy(defaultMs), max.multipliedBy(ms).dividedBy(defaultMs));
    Class<?> strategy = Class.forName("org.redisson.config.DelayStrategy");
    server.getClass().getMethod("setRetryDelay", strategy).invoke(server, scaled);
  }

  @Override
  public RLock lock(RedissonClient client, String key, long waitMs) throws Exception {
    RLock lock = client.getLock(key);
    return lock.tryLock(waitMs, TimeUnit.MILLISECONDS) ? lock : null;
  }

  @Override
  public void unlock(RLock hold) {
    hold.unlock();
  }

  @Override
  public void close(RedissonClient client) {
    client.shutdown();
  }
}
