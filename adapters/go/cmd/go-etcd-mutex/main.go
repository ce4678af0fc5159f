// go-etcd-mutex: etcd's own lock recipe, go.etcd.io/etcd/client/v3/concurrency (a Session and a
// Mutex per lock), the protocol in adapters/PROTOCOL.md. The recipe lockbench's `etcd-lease` models.
//
// As a user writes it: one Session per client (each protocol client has its own clientv3.Client and
// Session; one lease, TTL = the run's watchdog TTL rounded up to whole seconds, kept alive by the
// client's keep-alive stream every TTL/3), a Mutex per acquire on the
// lock's name; a new Session when the old one is done. Waits are Lock with a context deadline, a try
// once is TryLock. What the library does not offer is not declared:
//   - no fixed leases: a Session always keeps its lease alive;
//   - renewals are not exposed (the keep-alive stream is internal): no `renewed` events, so the local
//     deadline stays open until the loss signal (`renew_events: false`);
//   - the loss signal is Session.Done(), closed when the keep-alive stream ends (the lease was revoked,
//     expired, or went a TTL without an answer): every lock of the session is lost (`lost`). A lock key
//     deleted behind the holder's back goes unnoticed;
//   - fencing: Mutex.Header().Revision, the revision at which the lock was granted (the txn that put the
//     key, or the read after the wait); it strictly increases per lock across holders;
//   - Unlock deletes the key without checking it: a release never says `not_held`;
//   - re-entry is shared (`reentrant = "shared"` in the manifest; `reentrant: false` in hello, as there
//     is no count): the Mutex's key is <name>/<lease hex>, so a second Lock of one name on one Session
//     finds its own key as the owner and returns at once, and one Unlock deletes the key and frees the
//     lock for both. The `owner` of a request is not the library's: every acquire of a client is its
//     Session's. The adapter adds no lock of its own to hide this; lockbench's clients acquire one at a
//     time.
package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"lockbench/adapters/go/protocol"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

type etcdMutex struct {
	client   *clientv3.Client
	mu       sync.Mutex
	sessions map[int64]*concurrency.Session // by TTL in seconds
}

func (*etcdMutex) Adapter() string { return "go-etcd-mutex" }
func (*etcdMutex) Name() string    { return "etcd concurrency.Mutex (Go)" }
func (*etcdMutex) Module() string  { return "go.etcd.io/etcd/client/v3" }

func (*etcdMutex) Capabilities() protocol.Capabilities {
	return protocol.Capabilities{
		Fencing: true, AutoRenew: true, WaitNotify: true, LostSignal: true, HoldIdentity: true,
		MinTTLms: 1000, TTLGranularityMs: 1000,
	}
}

func (e *etcdMutex) Connect(servers []string, _ map[string]string) error {
	client, err := clientv3.New(clientv3.Config{
		Endpoints: servers, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := client.Status(ctx, servers[0]); err != nil {
		return fmt.Errorf("etcd at %v: %w", servers, err)
	}
	e.client = client
	e.sessions = map[int64]*concurrency.Session{}
	return nil
}

// session returns the client's session for this TTL, a new one if it is done.
func (e *etcdMutex) session(ttl int64) (*concurrency.Session, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.sessions[ttl]; s != nil {
		select {
		case <-s.Done():
		default:
			return s, nil
		}
	}
	s, err := concurrency.NewSession(e.client, concurrency.WithTTL(int(ttl)))
	if err != nil {
		return nil, err
	}
	e.sessions[ttl] = s
	return s, nil
}

func (e *etcdMutex) Acquire(req protocol.Request) (protocol.Grant, error) {
	if !req.Watchdog {
		return protocol.Grant{}, protocol.Refuse("unsupported",
			"a concurrency.Session keeps its lease alive: no fixed leases")
	}
	s, err := e.session(protocol.WholeSeconds(req.TTL))
	if err != nil {
		return protocol.Grant{}, err
	}
	m := concurrency.NewMutex(s, req.Key)
	if req.Wait == nil {
		err = m.TryLock(context.Background())
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), *req.Wait)
		err = m.Lock(ctx)
		cancel()
	}
	switch {
	case errors.Is(err, concurrency.ErrLocked), errors.Is(err, context.DeadlineExceeded):
		return protocol.Grant{}, protocol.Refuse("timeout", "%s is held: %v", req.Key, err)
	case err != nil:
		return protocol.Grant{}, err
	}
	token := m.Header().Revision
	return protocol.Grant{
		Release: func(ctx context.Context) error { return m.Unlock(ctx) },
		Token:   &token,
		Lost:    s.Done(), LostReason: "session_expired",
		LostDetail: fmt.Sprintf("etcd session (lease %x) Done()", s.Lease()),
	}, nil
}

func (e *etcdMutex) Close() {
	if e.client != nil {
		e.client.Close()
	}
}

func main() { protocol.Serve(func() protocol.Library { return &etcdMutex{} }) }
