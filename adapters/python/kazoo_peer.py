"""py-kazoo: kazoo's `Lock` recipe (ephemeral-sequential node under /lockbench/<key>, watch the
predecessor). One KazooClient per process; its session is every lock's lease and kazoo's heartbeats are
the renewal, which kazoo does not expose: no `renewed` events (`renew_events: false`), the holder's lease
stays open until a `lost` event. Fixed leases do not exist in ZooKeeper.

Loss: kazoo tells its user when the session, every lock's lease, is gone: the session listener's LOST
state loses every held lock (`session_expired`), so `lost_signal` is true. SUSPENDED (connection lost,
session maybe alive) is reported as `renew_failed`. A lock node deleted behind the holder's back (the
session alive) goes unnoticed by kazoo's Lock: no `lost` then. No fencing token (the recipe does not expose
the node's czxid). Setting: `session_timeout_ms` (default 10000, kazoo's default).
"""

import threading

import kazoo.version
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import LockTimeout

from lockbench_adapter import Peer, Refused, serve


class Kazoo(Peer):
    ADAPTER = "py-kazoo"
    LIBRARY = "kazoo"
    VERSION = kazoo.version.__version__
    CAPABILITIES = {"reentrant": False, "fencing": False, "auto_renew": True, "fixed_lease": False,
                    "wait_notify": True, "lost_signal": True, "hold_identity": True, "renew_events": False,
                    "min_ttl_ms": 1, "ttl_granularity_ms": 1}

    def setup(self, config):
        session = float(config.get("session_timeout_ms", 10000)) / 1000
        self.held = {}
        self.held_lock = threading.Lock()
        self.zk = KazooClient(hosts=",".join(config["servers"]), timeout=session)
        self.zk.add_listener(self.on_state)
        self.zk.start(timeout=10)

    def on_state(self, state):
        with self.held_lock:
            leases = list(self.held.values())
        for lease in leases:
            if state == KazooState.LOST:
                lease.lost("session_expired", "kazoo session LOST")
            elif state == KazooState.SUSPENDED:
                lease.renew_failed("kazoo connection SUSPENDED")

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
        with self.held_lock:
            self.held[id(lock)] = lease
        return lock, None

    def release(self, lock):
        with self.held_lock:
            self.held.pop(id(lock), None)
        if not self.zk.connected:
            raise Refused("not_held", "no session")
        lock.release()

    def close(self):
        self.zk.stop()
        self.zk.close()


if __name__ == "__main__":
    serve(Kazoo())
