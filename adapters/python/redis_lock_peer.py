"""py-redis-lock: python-redis-lock's `Lock` with `auto_renewal=True`, the guard-thread pattern.

The library keeps the lock at `lock:<name>` (SET NX EX) and, with auto-renewal, starts one thread per
held lock that extends it every 2/3 of `expire`. Expiry, wait and renewal times are whole seconds in this
library (sub-second values are rounded up here; a sub-second wait cannot be honoured). Waiters block on
BLPOP of a signal list that release pushes to (server wake-up).

Observed: the renewal thread calls `Lock.extend`; a subclass times each call and reports `renewed` or
`renew_failed`. When an extend fails the library's thread dies with the exception and tells the holder
nothing, so no `lost` is sent (the holder learns at its deadline, as a python-redis-lock user does).
"""

from importlib.metadata import version
import threading

import redis
import redis_lock

from lockbench_adapter import Peer, Refused, now, serve, whole_seconds


class StampingRedis(redis.Redis):
    """The redis-py client, noting (per thread) when each SET was sent: the last one is the one that won."""

    stamp = threading.local()

    def set(self, *args, **kwargs):
        self.stamp.t = now()
        return super().set(*args, **kwargs)


class ObservedLock(redis_lock.Lock):
    """The library's Lock, reporting each extend its renewal thread makes."""

    lease = None

    def extend(self, expire=None):
        sent = now()
        try:
            super().extend(expire)
        except Exception as e:
            if self.lease is not None:
                self.lease.renew_failed(f"{type(e).__name__}: {e}")
            raise
        if self.lease is not None:
            self.lease.renewed(sent=sent, done=now(), ttl_ms=(expire or self._expire) * 1000)


class RedisLock(Peer):
    ADAPTER = "py-redis-lock"
    LIBRARY = "python-redis-lock"
    VERSION = version("python-redis-lock")
    CAPABILITIES = {"reentrant": False, "fencing": False, "auto_renew": True, "fixed_lease": True,
                    "wait_notify": True, "lost_signal": False, "hold_identity": True, "renew_events": True,
                    "min_ttl_ms": 1000, "ttl_granularity_ms": 1000}

    def setup(self, config):
        self.client = StampingRedis.from_url(config["servers"][0])
        self.client.ping()

    def acquire(self, key, wait, mode, ttl_ms, owner, lease):
        lock = ObservedLock(self.client, key, expire=whole_seconds(ttl_ms),
                            auto_renewal=(mode == "watchdog"))
        lock.lease = lease
        timeout = None if wait is None else max(1, whole_seconds(wait * 1000))
        try:
            ok = lock.acquire(blocking=wait is not None, timeout=timeout)
        except redis_lock.TimeoutTooLarge as e:
            raise Refused("config", str(e))
        if not ok:
            raise Refused("timeout", f"{key} is held")
        lease.sent = self.client.stamp.t
        return lock, None

    def release(self, lock):
        try:
            lock.release()
        except redis_lock.NotAcquired as e:
            raise Refused("not_held", str(e))

    def close(self):
        self.client.close()


if __name__ == "__main__":
    serve(RedisLock)
