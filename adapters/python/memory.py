"""py-memory: locks in this process's memory, no library and no server. It measures what the protocol
itself costs per acquire/release (lockbench's `memory` strategy is the same work without a process
boundary).

The process is its server: the clients it serves share one table of locks, as the clients of a case
share the `memory` strategy's in-process server, so it is a lock among every client of one process (and
no lock between processes: a case run with one process per client has each client lock alone). Fixed
leases only, expiring on time: an expired lock is free to the next acquire, and its holder's release
answers `not_held` (the holder is not told; `lost_signal` is false). A waiter sleeps until a release
wakes it or the holder's lease or its own wait runs out. Tokens count per key across the clients. Not
re-entrant: an owner's second acquire waits like anyone else's.

Test settings: `hang` = "acquire" never answers acquires (a hung adapter, as lockbench must detect it);
`undeclared_lost` = "1" sends `lost` 100 ms after each grant although `lost_signal` is declared false (a
declaration that hides what the library does, which lockbench must refuse); `same_client` = "shared"
grants a client's second acquire of a lock it holds at once, as the same hold that one release frees (the
shared re-entry a manifest declares with `reentrant = "shared"`, etcd's concurrency.Mutex on one Session),
so that `check-adapter`'s check of that claim can be tested without a server.
"""

import threading
import time

from lockbench_adapter import Peer, Refused, serve


class Table:
    """The process's locks: key -> (token, expiry on the monotonic clock, the client that shares its hold
    or None), the last token per key."""

    def __init__(self):
        self.changed = threading.Condition()
        self.held = {}
        self.tokens = {}

    def take(self, key, wait, ttl_ms, sharer=None):
        now = time.monotonic()
        give_up = None if wait is None else now + wait
        with self.changed:
            while True:
                now = time.monotonic()
                holder = self.held.get(key)
                if holder is None or holder[1] <= now:
                    token = self.tokens.get(key, 0) + 1
                    self.tokens[key] = token
                    self.held[key] = (token, now + ttl_ms / 1000, sharer)
                    return token
                if sharer is not None and holder[2] is sharer:
                    return holder[0]
                if give_up is None or now >= give_up:
                    raise Refused("timeout", f"{key} is held")
                self.changed.wait(min(give_up, holder[1]) - now)

    def give_back(self, key, token):
        with self.changed:
            holder = self.held.get(key)
            if holder is None or holder[0] != token:
                raise Refused("not_held", f"{key} was taken by another holder")
            del self.held[key]
            self.changed.notify_all()
            if holder[1] <= time.monotonic():
                raise Refused("not_held", f"{key}: the lease had expired")


TABLE = Table()


class Memory(Peer):
    ADAPTER = "py-memory"
    LIBRARY = "none"
    VERSION = "0"
    CAPABILITIES = {"reentrant": False, "fencing": True, "auto_renew": False, "fixed_lease": True,
                    "wait_notify": True, "lost_signal": False, "hold_identity": True, "renew_events": False,
                    "min_ttl_ms": 1, "ttl_granularity_ms": 1}

    def setup(self, config):
        self.hang = config.get("hang") == "acquire"
        self.undeclared_lost = config.get("undeclared_lost") == "1"
        self.sharer = self if config.get("same_client") == "shared" else None

    def acquire(self, key, wait, mode, ttl_ms, owner, lease):
        if self.hang:
            threading.Event().wait()
        if mode != "fixed":
            raise Refused("unsupported", "py-memory has fixed leases only")
        token = TABLE.take(key, wait, ttl_ms, self.sharer)
        if self.undeclared_lost:
            threading.Timer(0.1, lease.lost, ("expired", "undeclared")).start()
        return (key, token), token

    def release(self, handle):
        TABLE.give_back(*handle)


if __name__ == "__main__":
    serve(Memory)
