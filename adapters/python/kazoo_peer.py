"""py-kazoo: kazoo's `Lock` recipe (ephemeral-sequential node under /lockbench/<key>, watch the
predecessor). One KazooClient per protocol client (the clients of a case share a process); its session
is every lock's lease and kazoo's heartbeats are the renewal, which kazoo does not expose: no `renewed`
events (`renew_events: false`), the holder's lease stays open until a `lost` event. Fixed leases do not
exist in ZooKeeper.

Loss, as kazoo's documentation tells a Lock's user: a state listener watches SUSPENDED and LOST, and a
holder stops at the first of them (after SUSPENDED it can no longer be sure it holds the lock; after LOST
it surely does not). Both are sent as `lost` (`lost_signal: true`) to every lock already granted, once;
a grant that comes while the connection is suspended is lost at once. CONNECTED after SUSPENDED gives no
lost lock back: its task has stopped, its release is answered `not_held` at once, and its node is
deleted then or, while the connection is down, when it is back (a LOST session took the nodes with it).
A lock node deleted behind the holder's back (the session alive) goes unnoticed by kazoo's Lock: no
`lost` then. No fencing token (the recipe does not expose the node's czxid). Setting:
`session_timeout_ms` (default 10000, kazoo's default).
"""

import sys
import threading
from importlib.metadata import version

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import LockTimeout

from lockbench_adapter import Peer, Refused, serve


class Held:
    """A granted lock: its `Lease` for events and whether a SUSPENDED or LOST state lost it."""

    def __init__(self, lease):
        self.lease = lease
        self.lost = False


class Kazoo(Peer):
    ADAPTER = "py-kazoo"
    LIBRARY = "kazoo"
    VERSION = version("kazoo")
    CAPABILITIES = {"reentrant": False, "fencing": False, "auto_renew": True, "fixed_lease": False,
                    "wait_notify": True, "lost_signal": True, "hold_identity": True, "renew_events": False,
                    "min_ttl_ms": 1, "ttl_granularity_ms": 1}

    def setup(self, config):
        session = float(config.get("session_timeout_ms", 10000)) / 1000
        self.held = {}
        # Locks lost while the connection was down, whose nodes go when it is back.
        self.orphans = []
        self.suspended = False
        self.guard = threading.Lock()
        self.zk = KazooClient(hosts=",".join(config["servers"]), timeout=session)
        self.zk.add_listener(self.on_state)
        self.zk.start(timeout=10)

    def on_state(self, state):
        # kazoo's listeners must not block: deletes run on a thread of their own.
        with self.guard:
            self.suspended = state != KazooState.CONNECTED
            if self.suspended:
                for held in self.held.values():
                    self.lose_once(held, state)
            if state == KazooState.LOST:
                self.orphans = []  # the session's ephemeral nodes went with it
            orphans = []
            if state == KazooState.CONNECTED:
                orphans, self.orphans = self.orphans, []
        if orphans:
            threading.Thread(target=self.delete, args=(orphans,), daemon=True).start()

    @staticmethod
    def lose_once(held, state):
        if not held.lost:
            held.lost = True
            if state == KazooState.LOST:
                held.lease.lost("session_expired", "kazoo session LOST")
            else:
                held.lease.lost("channel_closed",
                                "kazoo connection SUSPENDED: the lock may no longer be held (kazoo's Lock docs)")

    def delete(self, locks):
        for lock in locks:
            try:
                lock.release()
            except Exception as e:  # the connection went again: wait for the next CONNECTED
                print(f"py-kazoo: deleting a lost lock's node: {type(e).__name__}: {e}", file=sys.stderr)
                with self.guard:
                    self.orphans.append(lock)

    def acquire(self, key, wait, mode, ttl_ms, owner, lease):
        if mode != "watchdog":
            raise Refused("unsupported", "ZooKeeper has no fixed leases (the session is the lease)")
        lock = self.zk.Lock(f"/lockbench/{key}", identifier=owner)
        try:
            ok = lock.acquire(blocking=wait is not None, timeout=wait)
        except LockTimeout:
            ok = False
        if not ok:
            raise Refused("timeout", f"{key} is held")
        held = Held(lease)
        with self.guard:
            self.held[id(lock)] = held
            if self.suspended:
                self.lose_once(held, KazooState.SUSPENDED)
        return lock, None

    def release(self, lock):
        with self.guard:
            held = self.held.pop(id(lock), None)
            lost = held is not None and held.lost
            if lost and self.suspended:
                self.orphans.append(lock)
        if lost:
            if not self.suspended:
                self.delete([lock])
            raise Refused("not_held", "lost at a SUSPENDED or LOST connection state")
        if not self.zk.connected:
            raise Refused("not_held", "no session")
        lock.release()

    def close(self):
        self.zk.stop()
        self.zk.close()


if __name__ == "__main__":
    serve(Kazoo)
