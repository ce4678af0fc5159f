// The adapter protocol of adapters/PROTOCOL.md, written once for every JVM adapter: the reading loop
// (hello and ping answered inline, each acquire on a thread of its own, release and close), replies,
// events and the monotonic clock. An adapter implements Protocol.Library and calls Protocol.serveClients
// with a factory (one Library per protocol client, all in this process: `multi_client`) or
// Protocol.serve with one Library (the process is one client). Protocol.holdThreads is the `starve` op's
// part every adapter shares: it blocks the threads an adapter names until a deadline.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;

final class Protocol {
  static final ObjectMapper JSON = new ObjectMapper();
  private static final long ORIGIN = System.nanoTime();
  private static final AtomicLong NEXT_LEASE = new AtomicLong(1);

  /** What an adapter does with each request; every method must reply exactly once. */
  interface Library {
    /** Connects with hello's config; replies with hello(...) or an error. Runs on the reading thread. */
    void hello(long id, JsonNode config) throws Exception;

    /** Acquires (on a thread of its own while it runs: it may wait); replies with granted(...) or an error. */
    void acquire(long id, JsonNode request) throws Exception;

    /** Releases lease (must not block the reading thread for long); replies ok(...) or an error. */
    void release(long id, String lease) throws Exception;

    /** Blocks every thread the library renews on for forMs (`starve`, for adapters that declare it in
     * hello's capabilities); replies with holdThreads' reply. Runs on a thread of its own. */
    default void starve(long id, long forMs) throws Exception {
      error(id, "unsupported", "this adapter cannot block its library's threads (no `starve`)");
    }

    /** Ends this client (its library client; leases still held are left to expire). Runs on a thread
     * of its own after the close was answered. */
    default void close() throws Exception {}
  }

  /** The threads acquires run on (each acquire has one to itself while it runs; idle ones are reused
   * rather than a new thread started per acquire). */
  private static final ExecutorService ACQUIRES = Executors.newCachedThreadPool(run -> {
    Thread t = new Thread(run, "acquire");
    t.setDaemon(true);
    return t;
  });

  /** The name a thread held by `starve` takes while held (its native name on Linux, as /proc shows it),
   * as lockbench's own starved runtime threads do. */
  static final String HELD_THREAD = "lockbench-held";

  /** How long `starve` waits for every thread to be held before it replies with how many were. */
  private static final long GATHER_MS = 1000;

  /**
   * Holds each of the library's threads for forMs from now and replies to `starve` request id once all
   * are held (or after GATHER_MS, with how many were): each runner runs one task on one thread (an event
   * loop's execute, a timer's next tick); the task renames its thread HELD_THREAD, sleeps out the time
   * and gives the name back.
   */
  static void holdThreads(long id, long forMs, List<Consumer<Runnable>> runners) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(forMs);
    CountDownLatch held = new CountDownLatch(runners.size());
    for (Consumer<Runnable> runner : runners) {
      runner.accept(() -> {
        Thread me = Thread.currentThread();
        String name = me.getName();
        me.setName(HELD_THREAD);
        held.countDown();
        try {
          for (long left; (left = deadline - System.nanoTime()) > 0; ) {
            TimeUnit.NANOSECONDS.sleep(left);
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } finally {
          me.setName(name);
        }
      });
    }
    held.await(Math.min(GATHER_MS, forMs), TimeUnit.MILLISECONDS);
    write(ok(id).put("held", runners.size() - held.getCount()).put("threads", runners.size()));
  }

  /** Whether this process serves many clients (serveClients): hello then says `multi_client`. */
  private static volatile boolean multiClient;

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
        .put("version", version).put("multi_client", multiClient);
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

  /** Serves requests from stdin as one client (`library`) until close or end of input, then exits. */
  static void serve(Library library) throws Exception {
    loop(client -> library, null);
  }

  /**
   * Serves requests from stdin for many clients, each its own Library made by newClient at its hello,
   * until a process-wide close (no `client`) or end of input, then exits.
   */
  static void serveClients(Supplier<Library> newClient) throws Exception {
    multiClient = true;
    Map<Long, Library> clients = new ConcurrentHashMap<>();
    loop(client -> clients.get(client), new Clients(clients, newClient));
  }

  /** The clients of a serveClients process and how a new one is made. */
  private record Clients(Map<Long, Library> open, Supplier<Library> make) {}

  /** A client's Library by its number; null if it said no hello (or was closed). */
  private interface Route {
    Library get(long client);
  }

  /** The request on line, or null when it is not a JSON object. */
  private static JsonNode parse(String line) {
    try {
      JsonNode req = JSON.readTree(line);
      return req != null && req.isObject() ? req : null;
    } catch (Exception e) {
      return null;
    }
  }

  private static void loop(Route route, Clients clients) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      if (line.isBlank()) {
        continue;
      }
      JsonNode req = parse(line);
      if (req == null) {
        // Not a request (adapters/PROTOCOL.md): logged and skipped, the process goes on.
        System.err.println("not a protocol request, skipped: " + line);
        continue;
      }
      long id = req.path("id").asLong();
      long client = req.path("client").asLong(0);
      String op = req.path("op").asText();
      try {
        if (op.equals("ping")) {
          write(ok(id).put("t", now()));
          continue;
        }
        if (op.equals("close") && (clients == null || !req.has("client"))) {
          write(ok(id));
          System.exit(0);
        }
        Library library;
        if (op.equals("hello") && clients != null) {
          library = clients.make().get();
          clients.open().put(client, library);
        } else {
          library = route.get(client);
        }
        if (library == null) {
          error(id, "config", "client " + client + " is not open (no hello)");
          continue;
        }
        switch (op) {
          case "hello" -> library.hello(id, req.path("config"));
          case "acquire" -> ACQUIRES.execute(() -> {
            try {
              library.acquire(id, req);
            } catch (Exception e) {
              error(id, "backend", e.toString());
            }
          });
          case "release" -> library.release(id, req.path("lease").asText());
          case "starve" -> ACQUIRES.execute(() -> {
            try {
              library.starve(id, req.path("for_ms").asLong());
            } catch (Exception e) {
              error(id, "backend", e.toString());
            }
          });
          case "close" -> {
            clients.open().remove(client);
            write(ok(id));
            Thread closing = new Thread(() -> {
              try {
                library.close();
              } catch (Exception e) {
                System.err.println("closing client " + client + ": " + e);
              }
            });
            closing.setDaemon(true);
            closing.start();
          }
          default -> error(id, "unsupported", "unknown op " + op);
        }
      } catch (Exception e) {
        error(id, "backend", e.toString());
      }
    }
    System.exit(0);
  }
}
