// The adapter protocol of adapters/PROTOCOL.md, written once for every JVM adapter: the reading loop
// (hello and ping answered inline, each acquire on a thread of its own, release and close), replies,
// events and the monotonic clock. An adapter implements Protocol.Library and calls Protocol.serve.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;

final class Protocol {
  static final ObjectMapper JSON = new ObjectMapper();
  private static final long ORIGIN = System.nanoTime();
  private static final AtomicLong NEXT_LEASE = new AtomicLong(1);

  /** What an adapter does with each request; every method must reply exactly once. */
  interface Library {
    /** Connects with hello's config; replies with hello(...) or an error. Runs on the reading thread. */
    void hello(long id, JsonNode config) throws Exception;

    /** Acquires (on a thread of its own: it may wait); replies with granted(...) or an error. */
    void acquire(long id, JsonNode request) throws Exception;

    /** Releases lease (must not block the reading thread for long); replies ok(...) or an error. */
    void release(long id, String lease) throws Exception;
  }

  private Protocol() {}

  /** The adapter's monotonic clock, in nanoseconds. */
  static long now() {
    return System.nanoTime() - ORIGIN;
  }

  /** A fresh lease id, unique in the process. */
  static String newLease() {
    return "L" + NEXT_LEASE.getAndIncrement();
  }

  /** Writes one protocol line, whole. */
  static synchronized void write(ObjectNode message) {
    System.out.println(message.toString());
    System.out.flush();
  }

  static ObjectNode ok(long id) {
    return JSON.createObjectNode().put("id", id).put("ok", true);
  }

  static void error(long id, String kind, String message) {
    ObjectNode reply = JSON.createObjectNode().put("id", id).put("ok", false);
    reply.putObject("error").put("kind", kind).put("message", message);
    write(reply);
  }

  /** The acquire reply granting lease (no fencing token: neither library has one). */
  static void granted(long id, String lease) {
    write(ok(id).put("lease", lease).putNull("token"));
  }

  /** hello's reply; the caller fills the capabilities it returns in. */
  static ObjectNode hello(long id, String adapter, String library, String version) {
    return ok(id).put("protocol", 1).put("adapter", adapter).put("library", library)
        .put("version", version);
  }

  static void lost(String lease, String reason, String detail) {
    write(JSON.createObjectNode().put("ev", "lost").put("lease", lease).put("t", now())
        .put("reason", reason).put("detail", detail));
  }

  static void renewFailed(String lease, String error) {
    write(JSON.createObjectNode().put("ev", "renew_failed").put("lease", lease).put("t", now())
        .put("error", error));
  }

  /** A request's wait in milliseconds; try once (null) is 0. */
  static long waitMs(JsonNode request) {
    return request.path("wait_ms").isNull() ? 0 : request.path("wait_ms").asLong();
  }

  /** Serves requests from stdin until close or end of input, then exits. */
  static void serve(Library library) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      if (line.isBlank()) {
        continue;
      }
      JsonNode req = JSON.readTree(line);
      long id = req.path("id").asLong();
      try {
        switch (req.path("op").asText()) {
          case "hello" -> library.hello(id, req.path("config"));
          case "ping" -> write(ok(id).put("t", now()));
          case "acquire" -> new Thread(() -> {
            try {
              library.acquire(id, req);
            } catch (Exception e) {
              error(id, "backend", e.toString());
            }
          }).start();
          case "release" -> library.release(id, req.path("lease").asText());
          case "close" -> {
            write(ok(id));
            System.exit(0);
          }
          default -> error(id, "unsupported", "unknown op " + req.path("op").asText());
        }
      } catch (Exception e) {
        error(id, "backend", e.toString());
      }
    }
    System.exit(0);
  }
}
