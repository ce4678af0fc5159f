"""py-redis-py: redis-py's `Lock` (SET NX PX with a random token; release and extend by Lua scripts).

As most users write it: `client.lock(name, timeout=...)`, `acquire(blocking, blocking_timeout)`,
`release()`. The library has no auto-renewal and the caller's `extend` is not used, so only fixed leases
are offered. Waiters poll every 0.1 s (the library's default `sleep`). No fencing token, no loss signal:
the holder learns of expiry only from its own deadline, as a redis-py user does. `thread_local=False`
(redis-py's documented option) because this adapter acquires and releases on different threads.
"""

from importlib.metadata import version
import redis
from redis.exceptions import LockError, LockNotOwnedError
from redis.lock import Lock

from lockbench_adapter import Peer, Refused, now, serve


class StampedLock(Lock):
    """The library's Lock, noting when the SET that won was sent (the TTL runs from there)."""

    lease = None

    def do_acquire(self, token):
        sent = now()
        won = super().do_acquire(token)
        if won and self.lease is not None:
            self.lease.sent = sent
        return won


class RedisPy(Peer):
    ADAPTER = "py-redis-py"
    LIBRARY = "redis-py"
    VERSION = version("redis")
    CAPABILITIES = {"reentrant": False, "fencing": False, "auto_renew": False, "fixed_lease": True,
                    "wait_notify": False, "lost_signal": False, "hold_identity": True, "renew_events": False,
                    "min_ttl_ms": 1, "ttl_granularity_ms": 1}

    def setup(self, config):
        self.client = redis.Redis.from_url(config["servers"][0])
        self.client.ping()

    def acquire(self, key, wait, mode, ttl_ms, owner, lease):
        if mode != "fixed":
            raise Refused("unsupported", "redis-py Lock does not renew (watchdog lease)")
        lock = self.client.lock(key, timeout=ttl_ms / 1000, blocking=wait is not None,
                                blocking_timeout=wait, thread_local=False, lock_class=StampedLock)
        lock.lease = lease
        if not lock.acquire():
            raise Refused("timeout", f"{key} is held")
        return lock, None

    def release(self, lock):
        try:
            lock.release()
        except LockNotOwnedError as e:
            raise Refused("not_held", str(e))
        except LockError as e:
            raise Refused("not_held", str(e))

    def close(self):
        self.client.close()


if __name__ == "__main__":
    serve(RedisPy)
