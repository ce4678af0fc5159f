// The in-process throughput harness (adapters/HARNESS.md): baseline's load loop run by threads of one
// JVM against a lock library, with no adapter protocol in between, to tell the library's own speed from
// what the adapter rows add. A library (RedissonHarness, CuratorHarness) supplies its client and lock
// calls; this file runs the clients and writes every critical section as one line, which
// adapters/harness/summarize.py turns into baseline's figures (CS/s, acquire p50/p99, hand-off).
//
// Each client is a thread: pick one of `keys` keys at random, acquire it (wait up to acquire_wait),
// hold it for a task drawn uniformly from [task_min, task_max] ms, release it; again until the window
// ends. `instances` says how clients map to library clients: `shared` (every thread on one client,
// as a service runs its threads) or `per-thread` (a client of its own per thread, as the adapter rows
// give each lockbench client a process). Several processes, each with some of the clients, measure
// the same wall-clock window when given the same --start-at.
import java.io.BufferedWriter;
import java.io.FileWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

final class Harness {
  /** A lock library as the harness drives it. */
  interface Library<C, H> {
    /** A new client of the library (a RedissonClient, a started CuratorFramework). */
    C connect() throws Exception;

    /** Acquires `key`, waiting up to waitMs; null when the wait ran out. */
    H lock(C client, String key, long waitMs) throws Exception;

    /** Releases what lock returned, on the thread that acquired it. */
    void unlock(H hold) throws Exception;

    /** Closes a client. */
    void close(C client);
  }

  /** One critical section: client, key, when its acquire began, when it was granted and ended (ns). */
  private record Section(int client, int key, long asked, long start, long end) {}

  private Harness() {}

  /** CPU time (user and system) this process has used, in ns. */
  private static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean)
        java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
  }

  /** The command line: `--name value` pairs. */
  static Map<String, String> flags(String[] args) {
    Map<String, String> flags = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (!args[i].startsWith("--")) {
        throw new IllegalArgumentException("expected --name value, got " + args[i]);
      }
      flags.put(args[i].substring(2), args[i + 1]);
    }
    return flags;
  }

  static long number(Map<String, String> flags, String name, long fallback) {
    String value = flags.get(name);
    return value == null ? fallback : Long.parseLong(value);
  }

  /**
   * Runs the load of `flags` on `library` and writes the sections to --out (stdout by default):
   * clients (16), first-client (0, its index among all processes' clients), keys (4), task-min-ms (1),
   * task-max-ms (5), acquire-wait-ms (10000), go-at (epoch ms when the load begins, once every client
   * is connected; default at once), warmup-ms (4000), duration-ms (1000), start-at (epoch ms of the
   * window's start; default go-at + warmup), instances (shared | per-thread).
   */
  static <C, H> void run(Library<C, H> library, Map<String, String> flags) throws Exception {
    int clients = (int) number(flags, "clients", 16);
    int firstClient = (int) number(flags, "first-client", 0);
    int keys = (int) number(flags, "keys", 4);
    long taskMin = number(flags, "task-min-ms", 1) * 1_000_000;
    long taskMax = number(flags, "task-max-ms", 5) * 1_000_000;
    long waitMs = number(flags, "acquire-wait-ms", 10_000);
    long durationMs = number(flags, "duration-ms", 1000);
    String instances = flags.getOrDefault("instances", "shared");
    if (!instances.equals("shared") && !instances.equals("per-thread")) {
      throw new IllegalArgumentException("--instances is shared or per-thread, not " + instances);
    }
    List<C> connected = new ArrayList<>();
    for (int i = 0; i < (instances.equals("shared") ? 1 : clients); i++) {
      connected.add(library.connect());
    }
    long goAtMs = number(flags, "go-at", System.currentTimeMillis());
    if (flags.containsKey("go-at") && System.currentTimeMillis() > goAtMs) {
      System.err.println("harness: connected " + (System.currentTimeMillis() - goAtMs) + " ms after --go-at");
    }
    long startAtMs = number(flags, "start-at", goAtMs + number(flags, "warmup-ms", 4000));
    long measureFrom = System.nanoTime() + (startAtMs - System.currentTimeMillis()) * 1_000_000;
    long measureTo = measureFrom + durationMs * 1_000_000;
    AtomicInteger[] holders = new AtomicInteger[keys];
    for (int k = 0; k < keys; k++) {
      holders[k] = new AtomicInteger();
    }
    long[] cpu = new long[2]; // the process's CPU time (ns) at the window's start and end
    Thread cpuClock = new Thread(() -> {
      try {
        for (int i = 0; i < 2; i++) {
          long at = i == 0 ? measureFrom : measureTo;
          Thread.sleep(Math.max(0, (at - System.nanoTime()) / 1_000_000));
          cpu[i] = processCpuNanos();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "cpu clock");
    cpuClock.start();
    AtomicInteger overlaps = new AtomicInteger();
    AtomicInteger failures = new AtomicInteger();
    List<List<Section>> perClient = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < clients; i++) {
      C client = connected.get(instances.equals("shared") ? 0 : i);
      List<Section> sections = new ArrayList<>();
      perClient.add(sections);
      int id = firstClient + i;
      Thread thread = new Thread(() -> {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        try {
          Thread.sleep(Math.max(0, goAtMs - System.currentTimeMillis()));
        } catch (InterruptedException e) {
          return;
        }
        while (System.nanoTime() < measureTo) {
          int key = random.nextInt(keys);
          long asked = System.nanoTime();
          try {
            H hold = library.lock(client, "lockbench:{harness-" + key + "}", waitMs);
            if (hold == null) {
              failures.incrementAndGet();
              continue;
            }
            long start = System.nanoTime();
            if (holders[key].incrementAndGet() > 1) {
              overlaps.incrementAndGet();
            }
            long task = taskMin + (taskMax > taskMin ? random.nextLong(taskMax - taskMin) : 0);
            Thread.sleep(task / 1_000_000, (int) (task % 1_000_000));
            holders[key].decrementAndGet();
            long end = System.nanoTime();
            library.unlock(hold);
            sections.add(new Section(id, key, asked, start, end));
          } catch (Exception e) {
            failures.incrementAndGet();
            System.err.println("client " + id + ": " + e);
          }
        }
      }, "client " + id);
      threads.add(thread);
      thread.start();
    }
    for (Thread thread : threads) {
      thread.join();
    }
    cpuClock.join();
    for (C client : connected) {
      library.close(client);
    }
    String out = flags.get("out");
    try (PrintWriter writer = out == null
        ? new PrintWriter(System.out)
        : new PrintWriter(new BufferedWriter(new FileWriter(out)))) {
      writer.printf("window %d %d overlaps %d failures %d cpu_ns %d%n", measureFrom, measureTo,
          overlaps.get(), failures.get(), cpu[1] - cpu[0]);
      for (List<Section> sections : perClient) {
        for (Section s : sections) {
          writer.printf("%d %d %d %d %d%n", s.client(), s.key(), s.asked(), s.start(), s.end());
        }
      }
    } catch (IOException e) {
      throw new IOException("could not write " + out + ": " + e.getMessage(), e);
    }
  }
}
