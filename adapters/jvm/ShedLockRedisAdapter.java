// jvm-shedlock-redis: ShedLock's RedisLockProvider (shedlock-provider-redis-spring, pinned in pom.xml's
// profile jvm-shedlock-redis) on Spring Data Redis's LettuceConnectionFactory at its defaults, with the
// default environment name, as ShedLock's README shows it; the protocol in adapters/PROTOCOL.md
// (Protocol.java, ShedLockPeer.java, which says what every ShedLock row does). At its defaults
// (`safeUpdate` off) the provider's unlock deletes the key and its extension sets it if present, without
// checking who holds it.
import java.net.URI;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.provider.redis.spring.RedisLockProvider;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

public final class ShedLockRedisAdapter extends ShedLockPeer {
  /** One provider (its own connection factory) per protocol client, all in this JVM. */
  public static void main(String[] args) throws Exception {
    Protocol.serveClients(ShedLockRedisAdapter::new);
  }

  @Override
  protected String adapter() {
    return "jvm-shedlock-redis";
  }

  @Override
  protected String artifact() {
    return "shedlock-provider-redis-spring";
  }

  @Override
  protected ExtensibleLockProvider connect(long id, URI url, String[] user) {
    RedisStandaloneConfiguration server = new RedisStandaloneConfiguration(url.getHost(), url.getPort());
    if (user.length > 1) {
      server.setUsername(user[0].isEmpty() ? null : user[0]);
      server.setPassword(user[1]);
    }
    LettuceConnectionFactory factory = new LettuceConnectionFactory(server);
    factory.afterPropertiesSet();
    factory.start();
    connections = factory::destroy;
    factory.getConnection().close();
    return new RedisLockProvider(factory);
  }
}
