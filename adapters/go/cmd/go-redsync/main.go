// go-redsync: github.com/go-redsync/redsync/v4 (Redlock for Go) over go-redis v9 clients, one per
// independent redis-server (lockbench's Redlock nodes), the protocol in adapters/PROTOCOL.md. The
// library `redlock` is read beside.
//
// As a user writes it: one Redsync over the nodes, a Mutex per acquire with WithExpiry(the lease's TTL)
// and the library's defaults otherwise (retry delay 50-250 ms at random, drift factor 0.01, a per-node
// timeout of 5% of the expiry, quorum N/2+1). A wait is LockContext with a context deadline (and
// unlimited tries), a try once TryLockContext. What the library does not offer is not declared:
//   - no auto-renewal: redsync has Extend but nothing that calls it; only fixed leases are offered;
//   - no loss signal, no fencing token;
//   - Unlock deletes only its own value (a compare-and-delete script): false or an error → `not_held`.
//
// `sent` is when the winning attempt's first SET NX went out (redsync's own validity runs from then).
package main

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"time"

	"lockbench/adapters/go/protocol"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

type redsyncPeer struct {
	pools   []redsyncredis.Pool
	clients []*goredislib.Client
}

func (*redsyncPeer) Adapter() string { return "go-redsync" }
func (*redsyncPeer) Name() string    { return "redsync (Go)" }
func (*redsyncPeer) Module() string  { return "github.com/go-redsync/redsync/v4" }

func (*redsyncPeer) Capabilities() protocol.Capabilities {
	return protocol.Capabilities{FixedLease: true, HoldIdentity: true, MinTTLms: 1, TTLGranularityMs: 1}
}

func (r *redsyncPeer) Connect(servers []string, _ map[string]string) error {
	if len(servers) == 0 {
		return protocol.Refuse("config", "no redis servers given")
	}
	for _, url := range servers {
		options, err := goredislib.ParseURL(url)
		if err != nil {
			return protocol.Refuse("config", "%s: %v", url, err)
		}
		client := goredislib.NewClient(options)
		if err := client.Ping(context.Background()).Err(); err != nil {
			return err
		}
		r.clients = append(r.clients, client)
		r.pools = append(r.pools, goredis.NewPool(client))
	}
	return nil
}

// stamping notes when each attempt's first SET NX is sent: an attempt's SET NXs go out together, and
// a failed attempt's clean-up (an EVAL of the delete script) ends it.
type stamping struct {
	pool      redsyncredis.Pool
	attempt   *atomic.Bool
	attemptAt *atomic.Int64
}

func (p stamping) Get(ctx context.Context) (redsyncredis.Conn, error) {
	conn, err := p.pool.Get(ctx)
	return stampingConn{conn, p}, err
}

type stampingConn struct {
	redsyncredis.Conn
	p stamping
}

func (c stampingConn) SetNX(name, value string, expiry time.Duration) (bool, error) {
	if c.p.attempt.CompareAndSwap(false, true) {
		c.p.attemptAt.Store(protocol.Now())
	}
	return c.Conn.SetNX(name, value, expiry)
}

func (c stampingConn) Eval(script *redsyncredis.Script, keysAndArgs ...any) (any, error) {
	c.p.attempt.Store(false)
	return c.Conn.Eval(script, keysAndArgs...)
}

func (r *redsyncPeer) Acquire(req protocol.Request) (protocol.Grant, error) {
	if req.Watchdog {
		return protocol.Grant{}, protocol.Refuse("unsupported",
			"redsync does not renew a lock by itself (Extend is left to the caller)")
	}
	var attempt atomic.Bool
	var attemptAt atomic.Int64
	pools := make([]redsyncredis.Pool, len(r.pools))
	for i, pool := range r.pools {
		pools[i] = stamping{pool, &attempt, &attemptAt}
	}
	rs := redsync.New(pools...)
	var err error
	var m *redsync.Mutex
	if req.Wait == nil {
		m = rs.NewMutex(req.Key, redsync.WithExpiry(req.TTL))
		err = m.TryLockContext(context.Background())
	} else {
		m = rs.NewMutex(req.Key, redsync.WithExpiry(req.TTL), redsync.WithTries(math.MaxInt32))
		ctx, cancel := context.WithTimeout(context.Background(), *req.Wait)
		err = m.LockContext(ctx)
		cancel()
	}
	if err != nil {
		var taken *redsync.ErrTaken
		var nodeTaken *redsync.ErrNodeTaken
		if errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) || errors.As(err, &nodeTaken) ||
			errors.Is(err, context.DeadlineExceeded) {
			return protocol.Grant{}, protocol.Refuse("timeout", "%s is held: %v", req.Key, err)
		}
		return protocol.Grant{}, err
	}
	sent := attemptAt.Load()
	return protocol.Grant{
		Release: func(ctx context.Context) error {
			ok, err := m.UnlockContext(ctx)
			if !ok {
				return protocol.Refuse("not_held", "redsync Unlock: %v", err)
			}
			return nil
		},
		Sent: &sent,
	}, nil
}

func (r *redsyncPeer) Close() {
	for _, c := range r.clients {
		c.Close()
	}
}

func main() { protocol.Serve(&redsyncPeer{}) }
