// What the Spring Integration lock-registry peers (SpringJdbcAdapter, SpringRedisAdapter) share: a lease
// held by a `DistributedLock` of spring-integration-core on the thread that locked it.
//
// A registry's lock is a ReentrantLock per key in the process in front of the shared record, and both
// `unlock()` and `renewLock()` must run on the thread that holds it. So each lease lives on the acquire's
// own thread (Protocol gives each acquire one): the thread locks, replies, then waits for its release,
// calling `renew` every renewal period if the row renews for the library's user (the JDBC registry, whose
// docs tell the user to call `renewLock()`), and unlocks. Re-entry is not offered (`reentrant: false`): a
// second acquire of a key in the same process waits behind the first as another thread would.
// Watchdog leases: `tryLock(wait, ttl)` with the registry's own time to live (the run's TTL); fixed leases:
// the same with the lease's TTL on a registry that renews nothing. No fencing token.
import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.TimeUnit;
import org.springframework.integration.support.locks.DistributedLock;

abstract class LockRegistryPeer implements Protocol.Library {
  /** A granted lease: the queue its holding thread takes the release request's id from. */
  private record Hold(SynchronousQueue<Long> release) {}

  private final Map<String, Hold> held = new ConcurrentHashMap<>();
  /** The registry's time to live (the run's TTL): a watchdog lease's, set at hello. */
  protected Duration ttl;

  /** The lock of `key` in the registry for this lease mode (watchdog: the renewing one). */
  protected abstract DistributedLock lock(String key, boolean watchdog);

  /**
   * Renews a watchdog lease held by this thread, as the library's user does every renewal period; false
   * when the library said it is no longer held (the lease is then lost). Rows whose library renews by
   * itself do nothing here.
   */
  protected abstract boolean renew(String key, String lease) throws Exception;

  /** The period the holding thread renews at; null when the library renews by itself. */
  protected abstract Duration renewalPeriod();

  /** The exception with its causes (Spring wraps the driver's error in its own). */
  static String describe(Throwable e) {
    StringBuilder text = new StringBuilder(e.toString());
    Throwable cause = e.getCause();
    for (int depth = 0; cause != null && depth < 5; depth++, cause = cause.getCause()) {
      text.append("; caused by ").append(cause);
    }
    return text.toString().replace('\n', ' ');
  }

  /** Runs on the lease's own thread: lock, reply, renew until the release request, unlock. */
  @Override
  public void acquire(long id, JsonNode req) throws Exception {
    String key = req.path("key").asText();
    JsonNode leaseMode = req.path("lease");
    boolean watchdog = "watchdog".equals(leaseMode.path("mode").asText());
    Duration leaseTtl = watchdog ? ttl : Duration.ofMillis(leaseMode.path("ttl_ms").asLong());
    if (watchdog && leaseMode.path("ttl_ms").asLong() != ttl.toMillis()) {
      Protocol.error(id, "config", "a watchdog lease lasts the registry's time to live (" + ttl.toMillis()
          + " ms, set for the client), not " + leaseMode.path("ttl_ms").asLong() + " ms");
      return;
    }
    DistributedLock lock = lock(key, watchdog);
    boolean won;
    try {
      won = lock.tryLock(Duration.ofMillis(Protocol.waitMs(req)), leaseTtl);
    } catch (Exception e) {
      Protocol.error(id, "backend", describe(e));
      return;
    }
    if (!won) {
      Protocol.error(id, "timeout", key + " is held");
      return;
    }
    String lease = Protocol.newLease();
    Hold hold = new Hold(new SynchronousQueue<>());
    held.put(lease, hold);
    Protocol.granted(id, lease);
    Duration period = watchdog ? renewalPeriod() : null;
    boolean lost = false;
    Long releaseId = null;
    while (releaseId == null) {
      if (period == null || lost) {
        releaseId = hold.release().take();
      } else if ((releaseId = hold.release().poll(period.toMillis(), TimeUnit.MILLISECONDS)) == null) {
        lost = !renewOrLose(key, lease);
      }
    }
    unlock(lock, releaseId, lost ? lease + " was lost (its renewal failed)" : null);
  }

  /** One renewal; false (after sending `lost`) when it failed. */
  private boolean renewOrLose(String key, String lease) {
    try {
      if (renew(key, lease)) {
        return true;
      }
      Protocol.lost(lease, "renew_rejected", "renewLock: the lock is no longer held");
    } catch (Exception e) {
      Protocol.lost(lease, "renew_rejected", "renewLock failed: " + describe(e));
    }
    return false;
  }

  /** Unlocks on the holding thread (which frees the key in the process too) and answers the release. */
  private static void unlock(DistributedLock lock, long releaseId, String lostBecause) {
    try {
      lock.unlock();
      if (lostBecause == null) {
        Protocol.write(Protocol.ok(releaseId));
      } else {
        Protocol.error(releaseId, "not_held", lostBecause);
      }
    } catch (ConcurrentModificationException | IllegalStateException e) {
      // The record had expired (or was taken): the registry says so at unlock.
      Protocol.error(releaseId, "not_held", describe(e));
    } catch (Exception e) {
      Protocol.error(releaseId, "backend", describe(e));
    }
  }

  @Override
  public void release(long id, String lease) throws InterruptedException {
    Hold hold = held.remove(lease);
    if (hold == null) {
      Protocol.error(id, "not_held", "unknown lease " + lease);
    } else {
      hold.release().put(id);
    }
  }
}
