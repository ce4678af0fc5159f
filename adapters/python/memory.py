"""py-memory: locks in this process's memory, no library and no server. It measures what the protocol
itself costs per acquire/release (lockbench's `memory` strategy is the same work without a process
boundary). Each client keeps its own locks (clients in one process share nothing, as they share no
server), so it is a lock only among that client's owners.

Test settings: `hang` = "acquire" never answers acquires (a hung adapter, as lockbench must detect it);
`undeclared_lost` = "1" sends `lost` 100 ms after each grant although `lost_signal` is declared false (a
declaration that hides what the library does, which lockbench must refuse).
"""

import threading

from lockbench_adapter import Peer, Refused, serve


class Memory(Peer):
    ADAPTER = "py-memory"
    LIBRARY = "none"
    VERSION = "0"
    CAPABILITIES = {"reentrant": False, "fencing": True, "auto_renew": False, "fixed_lease": True,
                    "wait_notify": False, "lost_signal": False, "hold_identity": True, "renew_events": False,
                    "min_ttl_ms": 1, "ttl_granularity_ms": 1}

    def setup(self, config):
        self.hang = config.get("hang") == "acquire"
        self.undeclared_lost = config.get("undeclared_lost") == "1"
        self.held = {}
        self.tokens = {}
        self.lock = threading.Lock()

    def acquire(self, key, wait, mode, ttl_ms, owner, lease):
        if self.hang:
            threading.Event().wait()
        with self.lock:
            if key in self.held:
                raise Refused("timeout", f"{key} is held")
            token = self.tokens.get(key, 0) + 1
            self.tokens[key] = token
            self.held[key] = token
        if self.undeclared_lost:
            threading.Timer(0.1, lease.lost, ("expired", "undeclared")).start()
        return (key, token), token

    def release(self, handle):
        key, token = handle
        with self.lock:
            if self.held.get(key) != token:
                raise Refused("not_held", key)
            del self.held[key]


if __name__ == "__main__":
    serve(Memory)
