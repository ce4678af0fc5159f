"""py-etcd3: python-etcd3's `Lock` (a lease of `ttl` whole seconds, then a transaction that puts
/locks/<name> if its create revision is 0; waiters watch the key and retry).

python-etcd3's Lock never refreshes its lease by itself (the caller would call `refresh()`), so only fixed
leases are offered. No fencing token (the Lock does not keep the revision it wrote), no loss signal.
Release is a compare-value-and-delete transaction: False means the lock was no longer ours.
"""

from importlib.metadata import version
import threading
from urllib.parse import urlparse

import etcd3

from lockbench_adapter import Peer, Refused, now, serve, whole_seconds


class StampingClient(etcd3.Etcd3Client):
    """The library's client, noting (per thread) when each lease grant was sent: the lease's TTL runs
    from the grant of the attempt that won."""

    stamp = threading.local()

    def lease(self, ttl, lease_id=None):
        self.stamp.t = now()
        return super().lease(ttl, lease_id)


class Etcd3(Peer):
    ADAPTER = "py-etcd3"
    LIBRARY = "python-etcd3"
    VERSION = version("etcd3")
    CAPABILITIES = {"reentrant": False, "fencing": False, "auto_renew": False, "fixed_lease": True,
                    "wait_notify": True, "lost_signal": False, "hold_identity": True, "renew_events": False,
                    "min_ttl_ms": 1000, "ttl_granularity_ms": 1000}

    def setup(self, config):
        url = urlparse(config["servers"][0])
        self.client = StampingClient(host=url.hostname, port=url.port or 2379)
        self.client.status()

    def acquire(self, key, wait, mode, ttl_ms, owner, lease):
        if mode != "fixed":
            raise Refused("unsupported", "python-etcd3 Lock does not refresh its lease (watchdog lease)")
        lock = self.client.lock(key, ttl=whole_seconds(ttl_ms))
        if not lock.acquire(timeout=0 if wait is None else wait):
            raise Refused("timeout", f"{key} is held")
        lease.sent = self.client.stamp.t
        return lock, None

    def release(self, lock):
        if not lock.release():
            raise Refused("not_held", f"{lock.key} is no longer ours")

    def close(self):
        self.client.close()


if __name__ == "__main__":
    serve(Etcd3)
