// jvm-spring-jdbc: Spring Integration's JdbcLockRegistry (pinned in pom.xml's profile jvm-spring-jdbc) on
// PostgreSQL, the protocol in adapters/PROTOCOL.md (Protocol.java, LockRegistryPeer.java).
//
// One registry per process, built as the JDBC Lock Registry docs show: a DefaultLockRepository over a
// DataSource (HikariCP at its defaults, the pool Spring Boot gives a DataSource) with a
// JdbcTransactionManager (what Spring Boot configures for a DataSource), table prefix INT_, region
// DEFAULT, a random client id (a random UUID, as the library's one-argument constructor picks, given
// here so the pool can name its connections `lockbench <client id>`: the `application_name` by which
// lockbench's terminate_session fault finds the sessions of the client whose INT_LOCK row holds a
// lock, as it does a lease row's); `new JdbcLockRegistry(repository, ttl)` with the run's TTL as its time to
// live (the library's default is 10 s, JdbcLockRegistry.DEFAULT_TTL) and its other defaults
// (idleBetweenTries 100 ms, no insert hint). The lock record's expiry is computed on this process's
// clock (LocalDateTime.now(UTC) + ttl), not the server's.
//
// The repository checks its table at start (`SELECT COUNT(REGION) FROM INT_LOCK`); a missing table is a
// `config` error quoting the PostgreSQL DDL shipped in the jar (schema-postgresql.sql): lockbench creates
// it on servers it starts, never on a user's.
//
// JdbcLockRegistry renews nothing itself: its docs say `renewLock()` must be called while the locked work
// runs longer than the time to live. So a watchdog lease's holding thread calls `renewLock(key)` every
// third of the TTL and reports each renewal (`renewed`: sent, done, the TTL it set); the first renewal
// that fails (the row is no longer ours, or the call threw) loses the lease (`lost`). That loop and its
// signal are the adapter's, as a user's, not the library's. A waiter polls every idleBetweenTries
// (`wait_notify: false`).
import com.fasterxml.jackson.databind.JsonNode;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.springframework.integration.jdbc.lock.DefaultLockRepository;
import org.springframework.integration.jdbc.lock.JdbcLockRegistry;
import org.springframework.integration.support.locks.DistributedLock;
import org.springframework.jdbc.support.JdbcTransactionManager;

public final class SpringJdbcAdapter extends LockRegistryPeer {
  private JdbcLockRegistry registry;
  private HikariDataSource connections;

  /** One registry (its own DataSource and client id) per protocol client, all in this JVM. */
  public static void main(String[] args) throws Exception {
    Protocol.serveClients(SpringJdbcAdapter::new);
  }

  @Override
  public void close() {
    if (connections != null) {
      connections.close();
    }
  }

  @Override
  public void hello(long id, JsonNode config) throws Exception {
    ttl = Duration.ofMillis(Long.parseLong(config.path("ttl_ms").asText("10000")));
    URI url = URI.create(config.path("servers").path(0).asText());
    HikariConfig pool = new HikariConfig();
    pool.setJdbcUrl("jdbc:postgresql://" + url.getHost() + ":" + url.getPort() + url.getPath());
    if (url.getUserInfo() != null) {
      pool.setUsername(url.getUserInfo().split(":", 2)[0]);
    }
    String clientId = UUID.randomUUID().toString();
    pool.addDataSourceProperty("ApplicationName", "lockbench " + clientId);
    HikariDataSource dataSource;
    try {
      dataSource = new HikariDataSource(pool);
      connections = dataSource;
    } catch (Exception e) {
      Protocol.error(id, "backend", "no PostgreSQL connection: " + describe(e));
      return;
    }
    DefaultLockRepository repository = new DefaultLockRepository(dataSource, clientId);
    repository.setTransactionManager(new JdbcTransactionManager(dataSource));
    repository.afterPropertiesSet();
    repository.afterSingletonsInstantiated();
    try {
      repository.start();
    } catch (Exception e) {
      Protocol.error(id, "config", "table INT_LOCK is missing on this PostgreSQL server (" + e.getClass()
          .getSimpleName() + "); create it with: " + lockTableDdl());
      return;
    }
    registry = new JdbcLockRegistry(repository, ttl);
    var reply = Protocol.hello(id, "jvm-spring-jdbc", "Spring Integration JdbcLockRegistry",
        JdbcLockRegistry.class.getPackage().getImplementationVersion());
    reply.putObject("capabilities").put("reentrant", false).put("fencing", false)
        .put("auto_renew", true).put("fixed_lease", true).put("wait_notify", false)
        .put("lost_signal", true).put("hold_identity", true).put("renew_events", true)
        .put("min_ttl_ms", 1).put("ttl_granularity_ms", 1);
    Protocol.write(reply);
  }

  /** The INT_LOCK statement of the PostgreSQL schema in the jar, on one line. */
  private static String lockTableDdl() throws Exception {
    String schema;
    try (InputStream in = JdbcLockRegistry.class.getResourceAsStream(
        "/org/springframework/integration/jdbc/schema-postgresql.sql")) {
      schema = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    Matcher table = Pattern.compile("CREATE TABLE INT_LOCK\\s*\\((?:[^;])*?\\);").matcher(schema);
    return table.find() ? table.group().replaceAll("\\s+", " ") : "schema-postgresql.sql's INT_LOCK";
  }

  @Override
  protected DistributedLock lock(String key, boolean watchdog) {
    return registry.obtain(key);
  }

  @Override
  protected Duration renewalPeriod() {
    return ttl.dividedBy(3);
  }

  @Override
  protected boolean renew(String key, String lease) {
    long sent = Protocol.now();
    try {
      registry.renewLock(key);
    } catch (IllegalStateException e) {
      return false; // "Could not renew lock for: key": no row of ours
    }
    Protocol.write(Protocol.JSON.createObjectNode().put("ev", "renewed").put("lease", lease)
        .putNull("scheduled").put("sent", sent).put("done", Protocol.now())
        .put("ttl_ms", ttl.toMillis()).putNull("remaining_ms"));
    return true;
  }
}
