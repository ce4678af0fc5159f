// Package protocol is the adapter side of adapters/PROTOCOL.md, written once for every Go peer: it
// reads requests from stdin, answers hello and ping on the reading goroutine, runs each acquire and
// release on a goroutine of its own, writes one JSON line per reply or event (serialised), and keeps
// the lease ids (unique in the process). A peer supplies only how to make its Library: one per
// protocol client, every client in this process (`multi_client`), each with its own connections.
package protocol

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"sync"
	"time"
)

// Capabilities is what a library declares in hello (see PROTOCOL.md's table).
type Capabilities struct {
	Reentrant        bool  `json:"reentrant"`
	Fencing          bool  `json:"fencing"`
	AutoRenew        bool  `json:"auto_renew"`
	FixedLease       bool  `json:"fixed_lease"`
	WaitNotify       bool  `json:"wait_notify"`
	LostSignal       bool  `json:"lost_signal"`
	HoldIdentity     bool  `json:"hold_identity"`
	RenewEvents      bool  `json:"renew_events"`
	MinTTLms         int64 `json:"min_ttl_ms"`
	TTLGranularityMs int64 `json:"ttl_granularity_ms"`
}

// Request is an acquire request.
type Request struct {
	Key string
	// Wait is how long to wait for a held lock; nil means try once.
	Wait *time.Duration
	// Watchdog is true for a renewed lease, false for a fixed one.
	Watchdog bool
	// TTL is the lease's TTL (the watchdog's timeout, or the fixed lease).
	TTL   time.Duration
	Owner string
}

// Grant is a lock the library granted.
type Grant struct {
	// Release ends the hold; ErrNotHeld (or a Refused of kind not_held) when the library says it
	// was no longer held.
	Release func(ctx context.Context) error
	// Token is the library's fencing token, if it has one.
	Token *int64
	// Sent is when the request that won the lock was sent (Now's clock), if known.
	Sent *int64
	// Lost, if not nil, is closed when the library tells its user the lease is gone; LostReason and
	// LostDetail are sent with the `lost` event (read once Lost is closed).
	Lost       <-chan struct{}
	LostReason string
	LostDetail string
	// Renewals, if not nil, carries each renewal the server confirmed, sent as `renewed` events.
	Renewals <-chan Renewal
}

// Renewal is a renewal the server confirmed.
type Renewal struct {
	// Sent and Done are when the renewal was sent and answered (Now's clock).
	Sent, Done int64
	// TTL is the lease it granted, counted from Sent.
	TTL time.Duration
}

// Library is one lock library behind the protocol.
type Library interface {
	// Adapter is the peer id (`go-redsync`).
	Adapter() string
	// Name is the library's name.
	Name() string
	// Module is the Go module whose version is reported (from the binary's build info).
	Module() string
	Capabilities() Capabilities
	// Connect connects to the servers, given hello's config.
	Connect(servers []string, settings map[string]string) error
	// Acquire takes the lock, or returns a Refused (timeout, unsupported, config) or another error.
	Acquire(req Request) (Grant, error)
	// Close closes the library's clients.
	Close()
}

// Refused is an error reply of a given kind.
type Refused struct {
	Kind    string
	Message string
}

func (r *Refused) Error() string { return r.Message }

// Refuse makes a Refused error.
func Refuse(kind, format string, args ...any) error {
	return &Refused{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

var origin = time.Now()

// Now is the adapter's monotonic clock in nanoseconds (Go's time keeps a monotonic reading).
func Now() int64 { return time.Since(origin).Nanoseconds() }

// WholeSeconds rounds a TTL up to whole seconds (at least 1).
func WholeSeconds(d time.Duration) int64 {
	return max(1, int64(math.Ceil(d.Seconds()-1e-9)))
}

var (
	writeMu sync.Mutex
	out     = bufio.NewWriter(os.Stdout)
)

func write(message map[string]any) {
	line, err := json.Marshal(message)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot encode %v: %v\n", message, err)
		return
	}
	writeMu.Lock()
	defer writeMu.Unlock()
	out.Write(append(line, '\n'))
	out.Flush()
}

func reply(id int64, fields map[string]any) {
	message := map[string]any{"id": id, "ok": true}
	for k, v := range fields {
		message[k] = v
	}
	write(message)
}

func fail(id int64, err error) {
	kind := "backend"
	var refused *Refused
	if errors.As(err, &refused) {
		kind = refused.Kind
	}
	write(map[string]any{"id": id, "ok": false, "error": map[string]any{"kind": kind, "message": err.Error()}})
}

// version of module in this binary's build info.
func version(module string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == module {
				return dep.Version
			}
		}
	}
	return "unknown"
}

type held struct {
	grant    Grant
	released chan struct{}
}

type server struct {
	newLib    func() Library
	mu        sync.Mutex
	clients   map[int64]Library
	leases    map[string]*held
	nextLease int64
}

// client is the Library of an open client, or a config error.
func (s *server) client(n int64) (Library, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lib := s.clients[n]; lib != nil {
		return lib, nil
	}
	return nil, Refuse("config", "client %d is not open (no hello)", n)
}

type message struct {
	ID       int64           `json:"id"`
	Op       string          `json:"op"`
	Client   *int64          `json:"client"`
	Config   json.RawMessage `json:"config"`
	Key      string          `json:"key"`
	WaitMs   *float64        `json:"wait_ms"`
	Lease    json.RawMessage `json:"lease"`
	Owner    string          `json:"owner"`
	Protocol int             `json:"protocol"`
}

func (s *server) hello(m message) error {
	var config map[string]any
	if err := json.Unmarshal(m.Config, &config); err != nil {
		return Refuse("config", "hello config: %v", err)
	}
	var servers []string
	settings := map[string]string{}
	for k, v := range config {
		if k == "servers" {
			list, _ := v.([]any)
			for _, s := range list {
				servers = append(servers, fmt.Sprint(s))
			}
		} else {
			settings[k] = fmt.Sprint(v)
		}
	}
	lib := s.newLib()
	if err := lib.Connect(servers, settings); err != nil {
		return err
	}
	s.mu.Lock()
	s.clients[clientOf(m)] = lib
	s.mu.Unlock()
	reply(m.ID, map[string]any{
		"protocol": 1, "adapter": lib.Adapter(), "library": lib.Name(), "multi_client": true,
		"version": version(lib.Module()), "capabilities": lib.Capabilities(),
	})
	return nil
}

// clientOf is the request's client number (0 when it names none).
func clientOf(m message) int64 {
	if m.Client == nil {
		return 0
	}
	return *m.Client
}

func (s *server) acquire(m message) error {
	var lease struct {
		Mode  string  `json:"mode"`
		TTLms float64 `json:"ttl_ms"`
	}
	if err := json.Unmarshal(m.Lease, &lease); err != nil {
		return Refuse("config", "lease: %v", err)
	}
	if lease.Mode != "watchdog" && lease.Mode != "fixed" {
		return Refuse("config", "unknown lease mode %q", lease.Mode)
	}
	req := Request{
		Key: m.Key, Watchdog: lease.Mode == "watchdog", Owner: m.Owner,
		TTL: time.Duration(lease.TTLms * float64(time.Millisecond)),
	}
	if m.WaitMs != nil {
		wait := time.Duration(*m.WaitMs * float64(time.Millisecond))
		req.Wait = &wait
	}
	lib, err := s.client(clientOf(m))
	if err != nil {
		return err
	}
	grant, err := lib.Acquire(req)
	if err != nil {
		return err
	}
	h := &held{grant: grant, released: make(chan struct{})}
	s.mu.Lock()
	s.nextLease++
	id := fmt.Sprintf("L%d", s.nextLease)
	s.leases[id] = h
	s.mu.Unlock()
	fields := map[string]any{"lease": id, "token": grant.Token}
	if grant.Sent != nil {
		fields["sent"] = *grant.Sent
	}
	reply(m.ID, fields)
	if grant.Lost != nil || grant.Renewals != nil {
		go forwardEvents(id, grant, h.released)
	}
	return nil
}

// forwardEvents sends a lease's renewals and its loss as events until it is lost or released (a nil
// channel is never ready).
func forwardEvents(id string, grant Grant, released <-chan struct{}) {
	renewals := grant.Renewals
	for {
		select {
		case r, open := <-renewals:
			if !open {
				renewals = nil
				continue
			}
			write(map[string]any{"ev": "renewed", "lease": id, "scheduled": nil, "sent": r.Sent,
				"done": r.Done, "ttl_ms": r.TTL.Milliseconds(), "remaining_ms": nil})
		case <-grant.Lost:
			write(map[string]any{"ev": "lost", "lease": id, "t": Now(), "reason": grant.LostReason,
				"detail": grant.LostDetail})
			return
		case <-released:
			return
		}
	}
}

func (s *server) release(m message) error {
	var id string
	if err := json.Unmarshal(m.Lease, &id); err != nil {
		return Refuse("config", "lease: %v", err)
	}
	s.mu.Lock()
	h := s.leases[id]
	delete(s.leases, id)
	s.mu.Unlock()
	if h == nil {
		return Refuse("not_held", "unknown lease %s", id)
	}
	close(h.released)
	if err := h.grant.Release(context.Background()); err != nil {
		var refused *Refused
		if errors.As(err, &refused) {
			return err
		}
		return Refuse("not_held", "%v", err)
	}
	reply(m.ID, nil)
	return nil
}

// Serve runs the protocol on stdin/stdout, each client's Library made by newLib at its hello, until a
// process-wide close (no `client`: every client is closed) or end of input, then exits. A close naming
// a client closes that one.
func Serve(newLib func() Library) {
	s := &server{newLib: newLib, clients: map[int64]Library{}, leases: map[string]*held{}}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<16), 1<<24)
	for in.Scan() {
		var m message
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			fmt.Fprintf(os.Stderr, "bad request line %q: %v\n", in.Text(), err)
			continue
		}
		switch m.Op {
		case "hello":
			if err := s.hello(m); err != nil {
				fail(m.ID, err)
			}
		case "ping":
			reply(m.ID, map[string]any{"t": Now()})
		case "acquire":
			go func() {
				if err := s.acquire(m); err != nil {
					fail(m.ID, err)
				}
			}()
		case "release":
			go func() {
				if err := s.release(m); err != nil {
					fail(m.ID, err)
				}
			}()
		case "close":
			if m.Client != nil {
				s.mu.Lock()
				lib := s.clients[*m.Client]
				delete(s.clients, *m.Client)
				s.mu.Unlock()
				reply(m.ID, nil)
				if lib != nil {
					go lib.Close()
				}
				continue
			}
			reply(m.ID, nil)
			s.closeAll()
			os.Exit(0)
		default:
			fail(m.ID, Refuse("unsupported", "unknown op %q", m.Op))
		}
	}
	os.Exit(0)
}

func (s *server) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, lib := range s.clients {
		lib.Close()
	}
}
