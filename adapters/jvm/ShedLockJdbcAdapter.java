// jvm-shedlock-jdbc and jvm-shedlock-jdbc-mysql: ShedLock's JdbcTemplateLockProvider on PostgreSQL or on
// MySQL/MariaDB (pinned in pom.xml's profiles of the same names, each with its database's JDBC driver;
// the server's scheme, postgres:// or mysql://, picks the driver and the name the row answers hello with), the protocol in adapters/PROTOCOL.md
// (Protocol.java, ShedLockPeer.java, which says what every ShedLock row does). Configured as ShedLock's
// README recommends: `usingDbTime()` (the lease's expiry is judged by the database's clock) over a
// HikariCP DataSource at its defaults, the pool Spring Boot gives a DataSource, and
// `withLockedByValue(<host name>-<client number>)` (ShedLockPeer.java says why). The `shedlock` table is
// the README's DDL for that database: a missing table is a `config` error quoting it (lockbench creates
// it on servers it starts, never on a user's).
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.net.URI;
import java.util.concurrent.atomic.AtomicLong;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.provider.jdbctemplate.JdbcTemplateLockProvider;
import net.javacrumbs.shedlock.support.Utils;
import org.springframework.jdbc.BadSqlGrammarException;
import org.springframework.jdbc.core.JdbcTemplate;

public final class ShedLockJdbcAdapter extends ShedLockPeer {
  /** The README's PostgreSQL table. */
  static final String TABLE_DDL = "CREATE TABLE shedlock(name VARCHAR(64) NOT NULL, "
      + "lock_until TIMESTAMP NOT NULL, locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL, "
      + "PRIMARY KEY (name))";

  /** The README's MySQL and MariaDB table. */
  static final String MYSQL_TABLE_DDL = "CREATE TABLE shedlock(name VARCHAR(64) NOT NULL, "
      + "lock_until TIMESTAMP(3) NOT NULL, locked_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), "
      + "locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))";

  /** Whether this client's server is a MySQL or MariaDB (a mysql:// or mariadb:// address). */
  private boolean mysql;

  /** The clients of this process, numbered as they say hello (each one's `lockedBy`). */
  private static final AtomicLong CLIENTS = new AtomicLong();

  /** One provider (its own DataSource) per protocol client, all in this JVM. */
  public static void main(String[] args) throws Exception {
    Protocol.serveClients(ShedLockJdbcAdapter::new);
  }

  @Override
  protected String adapter() {
    return mysql ? "jvm-shedlock-jdbc-mysql" : "jvm-shedlock-jdbc";
  }

  @Override
  protected String artifact() {
    return "shedlock-provider-jdbc-template";
  }

  @Override
  protected ExtensibleLockProvider connect(long id, URI url, String[] user) {
    mysql = "mysql".equals(url.getScheme()) || "mariadb".equals(url.getScheme());
    HikariConfig pool = new HikariConfig();
    String driver = mysql ? "jdbc:mariadb://" : "jdbc:postgresql://";
    pool.setJdbcUrl(driver + url.getHost() + ":" + url.getPort() + url.getPath());
    if (user.length > 0) {
      pool.setUsername(user[0]);
    }
    if (user.length > 1) {
      pool.setPassword(user[1]);
    }
    String lockedBy = Utils.getHostname() + "-" + CLIENTS.getAndIncrement();
    if (!mysql) {
      pool.addDataSourceProperty("ApplicationName", "lockbench " + lockedBy);
    }
    HikariDataSource dataSource = new HikariDataSource(pool);
    connections = dataSource;
    JdbcTemplate jdbcTemplate = new JdbcTemplate(dataSource);
    try {
      jdbcTemplate.queryForObject("SELECT count(*) FROM shedlock", Long.class);
    } catch (BadSqlGrammarException e) {
      Protocol.error(id, "config", "table shedlock is missing on this "
          + (mysql ? "MySQL server" : "PostgreSQL server") + "; create it with: "
          + (mysql ? MYSQL_TABLE_DDL : TABLE_DDL));
      return null;
    }
    return new JdbcTemplateLockProvider(JdbcTemplateLockProvider.Configuration.builder()
        .withJdbcTemplate(jdbcTemplate)
        .usingDbTime()
        .withLockedByValue(lockedBy)
        .build());
  }
}
