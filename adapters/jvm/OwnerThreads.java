// The Java threads that protocol owners run on, for libraries that bind a hold to the thread that took
// it (Redisson's RLock, Curator's InterProcessMutex, both released only by that thread). An owner is one
// thread while it has an acquire or a hold, and its calls run on it one after another, as a thread's
// would; a service's worker thread holding many locks is one owner holding many. A thread goes to a
// later owner only once its owner's last call ended cleanly (so no lock of it can be left on the
// server); otherwise it ends with its owner.
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Function;

final class OwnerThreads {
  /** One protocol owner: its Java thread, and how many acquires and holds still use it. */
  static final class Owner {
    final String name;
    final ExecutorService thread;
    int uses; // guarded by the OwnerThreads
    /** A lock call of this owner ended in an error, so its thread may still hold a lock on the
     * server: the thread is not given to another owner (guarded by the OwnerThreads). */
    boolean unclean;

    Owner(String name, ExecutorService thread) {
      this.name = name;
      this.thread = thread;
    }
  }

  private final Map<String, Owner> owners = new HashMap<>();
  /** Threads whose owner is done with them, kept for the next owner. */
  private final ArrayDeque<ExecutorService> idle = new ArrayDeque<>();

  /** A lock call on an owner's thread: answers its request and says whether the lock was granted. */
  interface Grant {
    boolean run(Owner owner) throws Exception;
  }

  /**
   * Runs an acquire of owner `name` on its thread: `grant` answers request `id`; a granted lock keeps
   * the owner (its release leaves it), anything else leaves it at once, cleanly unless `grant` threw
   * (answered as a `backend` error in `describe`'s words).
   */
  void acquire(String name, long id, Grant grant, Function<Exception, String> describe) {
    Owner owner = enter(name);
    owner.thread.execute(() -> {
      boolean granted = false;
      boolean clean = false;
      try {
        granted = grant.run(owner);
        clean = true;
      } catch (Exception e) {
        Protocol.error(id, "backend", describe.apply(e));
      } finally {
        if (!granted) {
          leave(owner, clean);
        }
      }
    });
  }

  /** One more use (an acquire, then its hold) of owner `name`, on its thread. */
  private synchronized Owner enter(String name) {
    Owner owner = owners.computeIfAbsent(name, n -> new Owner(n, thread()));
    owner.uses++;
    return owner;
  }

  /** One use of owner ended, cleanly (no lock of its thread can be left on the server) or not. */
  synchronized void leave(Owner owner, boolean clean) {
    owner.unclean |= !clean;
    if (--owner.uses == 0) {
      owners.remove(owner.name);
      if (owner.unclean) {
        owner.thread.shutdown();
      } else {
        idle.addLast(owner.thread);
      }
    }
  }

  /** An idle thread (its last owner has no acquire or hold left) or a new one. */
  private ExecutorService thread() {
    ExecutorService reused = idle.pollFirst();
    return reused != null ? reused : Executors.newSingleThreadExecutor(run -> {
      Thread t = new Thread(run, "owner");
      t.setDaemon(true);
      return t;
    });
  }
}
