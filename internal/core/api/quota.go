package api

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentwire/agentwire/core/store"
)

// Quotas bound what one project may hold and how fast it may ask
// (docs/limits.md). A zero field sets no bound, so an API built without
// Quotas bounds nothing; Core's server starts from DefaultQuotas.
type Quotas struct {
	// Sessions is how many Sessions a project may have.
	Sessions int
	// QueuedTurns is how many of a project's Turns may wait queued.
	QueuedTurns int
	// StoreBytes bounds a project's stored bytes (store.Usage.Bytes: the
	// Sessions' options, the inputs and the journal); a request that
	// would store more is refused. The journal grows outside the API, so
	// a project may pass the bound by what its running Turns journal (each
	// bounded by the gateway's per-Turn cap); its next request is refused.
	StoreBytes int64
	// Rate and Burst are each project's token bucket: Burst requests at
	// once, then Rate a second. The same bucket, per client IP address,
	// bounds requests that fail authentication.
	Rate  float64
	Burst int
	// UsageTTL is how long a project's usage read from the store is used
	// before it is read again (DefaultUsageTTL when 0); the API counts
	// what it admits meanwhile itself.
	UsageTTL time.Duration
}

// The default quotas (docs/limits.md).
const (
	DefaultMaxSessions    = 1000
	DefaultMaxQueuedTurns = 100
	DefaultMaxStoreBytes  = 1 << 30
	DefaultRate           = 20
	DefaultBurst          = 100
	DefaultUsageTTL       = 5 * time.Second
)

// DefaultQuotas are the quotas of a Core that sets none.
func DefaultQuotas() Quotas {
	return Quotas{Sessions: DefaultMaxSessions, QueuedTurns: DefaultMaxQueuedTurns, StoreBytes: DefaultMaxStoreBytes,
		Rate: DefaultRate, Burst: DefaultBurst}
}

// The quotas a 429 names.
const (
	QuotaSessions    = "sessions"
	QuotaQueuedTurns = "queued_turns"
	QuotaStoreBytes  = "store_bytes"
	QuotaRequestRate = "request_rate"
)

// quotaExceeded answers 429 with Retry-After and the API's error body
// naming the quota and its limit.
func quotaExceeded(w http.ResponseWriter, quota string, limit float64, retry int64, detail string) {
	w.Header().Set("Retry-After", strconv.FormatInt(retry, 10))
	writeJSON(w, http.StatusTooManyRequests, Error{Error: "quota_exceeded", Quota: quota, Limit: limit, Detail: detail})
}

// limiter holds the API's rate buckets and cached usage.
type limiter struct {
	projects, clients *buckets

	mu    sync.Mutex
	usage map[string]*cachedUsage
}

// cachedUsage is one project's usage; its lock serializes that project's
// admissions only, so a slow read of one project's usage holds no other
// project's requests.
type cachedUsage struct {
	mu sync.Mutex
	u  store.Usage
	at time.Time // zero: never read
}

func newLimiter(q Quotas) *limiter {
	l := &limiter{usage: map[string]*cachedUsage{}}
	if q.Rate > 0 && q.Burst > 0 {
		l.projects = &buckets{rate: q.Rate, burst: float64(q.Burst)}
		l.clients = &buckets{rate: q.Rate, burst: float64(q.Burst)}
	}
	return l
}

// rateLimited takes a token of the project's bucket and answers 429 when
// there is none.
//
// decision: the administration key is an operator's and is not rate
// limited; it belongs to no project.
func (a *API) rateLimited(w http.ResponseWriter, c store.Credential) bool {
	if a.limits.projects == nil || c.Kind == store.KindAdmin {
		return false
	}
	ok, wait := a.limits.projects.take(c.Project, a.clock().Now())
	if !ok {
		a.refuseRate(w, wait)
	}
	return !ok
}

// clientRefused answers 429 when r's client address spent its bucket on
// requests that failed authentication; it is checked before the
// credential is looked up, so a flood of bad keys costs no store read.
//
// decision: a client address that sent Burst failing requests is refused
// whatever it sends next, a valid key included, until its bucket refills;
// the alternative, authenticating first, is the work the flood wants.
func (a *API) clientRefused(w http.ResponseWriter, r *http.Request) bool {
	if a.limits.clients == nil {
		return false
	}
	if empty, wait := a.limits.clients.empty(remoteIP(r), a.clock().Now()); empty {
		a.refuseRate(w, wait)
		return true
	}
	return false
}

// authFailed spends a token of the client address's bucket.
func (a *API) authFailed(r *http.Request) {
	if a.limits.clients != nil {
		a.limits.clients.take(remoteIP(r), a.clock().Now())
	}
}

func (a *API) refuseRate(w http.ResponseWriter, wait time.Duration) {
	q := a.cfg.Quotas
	quotaExceeded(w, QuotaRequestRate, q.Rate, retryAfter(wait),
		fmt.Sprintf("at most %g requests a second, %d at once; retry after the Retry-After seconds", q.Rate, q.Burst))
}

func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// demand is what a request would add to its project.
type demand struct {
	sessions, queuedTurns int
	bytes                 int64
}

// admit checks that d fits project's quotas and counts it, or answers 429
// and returns false. The caller gives it back with release when its write
// failed. Admissions are counted under one lock against a usage read at
// most UsageTTL ago, so concurrent requests cannot all pass a bound that
// only one of them fits.
func (a *API) admit(ctx context.Context, w http.ResponseWriter, project string, d demand) (release func(), ok bool) {
	q := a.cfg.Quotas
	if q.Sessions <= 0 && q.QueuedTurns <= 0 && q.StoreBytes <= 0 {
		return func() {}, true
	}
	l := a.limits
	l.mu.Lock()
	c := l.usage[project]
	if c == nil {
		c = &cachedUsage{}
		l.usage[project] = c
	}
	l.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	now := a.clock().Now()
	ttl := q.UsageTTL
	if ttl <= 0 {
		ttl = DefaultUsageTTL
	}
	read := func() bool {
		u, err := a.cfg.Store.ProjectUsage(ctx, project)
		if err != nil {
			a.internal(w, "read project usage", err)
			return false
		}
		c.u, c.at = u, now
		return true
	}
	fresh := false
	if c.at.IsZero() || now.Sub(c.at) >= ttl || now.Before(c.at) {
		if !read() {
			return nil, false
		}
		fresh = true
	}
	over := func() bool {
		return q.Sessions > 0 && d.sessions > 0 && c.u.Sessions+d.sessions > q.Sessions ||
			q.QueuedTurns > 0 && d.queuedTurns > 0 && c.u.QueuedTurns+d.queuedTurns > q.QueuedTurns ||
			q.StoreBytes > 0 && d.bytes > 0 && c.u.Bytes+d.bytes > q.StoreBytes
	}
	// The local count only grows between reads (a Turn that started or a
	// Session deleted meanwhile is not seen), so a refusal is decided on a
	// fresh read: a client that submits Turns one after another as fast as
	// they run is never refused for Turns that already left the queue.
	if over() && !fresh && !read() {
		return nil, false
	}
	retry := retryAfter(ttl)
	switch {
	case q.Sessions > 0 && d.sessions > 0 && c.u.Sessions+d.sessions > q.Sessions:
		quotaExceeded(w, QuotaSessions, float64(q.Sessions), retry,
			fmt.Sprintf("the project has %d Sessions, its limit", c.u.Sessions))
		return nil, false
	case q.QueuedTurns > 0 && d.queuedTurns > 0 && c.u.QueuedTurns+d.queuedTurns > q.QueuedTurns:
		quotaExceeded(w, QuotaQueuedTurns, float64(q.QueuedTurns), retry,
			fmt.Sprintf("the project has %d queued Turns, its limit; retry once some have started", c.u.QueuedTurns))
		return nil, false
	case q.StoreBytes > 0 && d.bytes > 0 && c.u.Bytes+d.bytes > q.StoreBytes:
		quotaExceeded(w, QuotaStoreBytes, float64(q.StoreBytes), retry,
			fmt.Sprintf("the project stores about %d bytes; %d more would pass its limit", c.u.Bytes, d.bytes))
		return nil, false
	}
	c.u.Sessions += d.sessions
	c.u.QueuedTurns += d.queuedTurns
	c.u.Bytes += d.bytes
	at := c.at
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.at.Equal(at) { // a newer read already holds the truth
			c.u.Sessions -= d.sessions
			c.u.QueuedTurns -= d.queuedTurns
			c.u.Bytes -= d.bytes
		}
	}, true
}
