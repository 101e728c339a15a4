package api

import (
	"math"
	"sync"
	"time"
)

// buckets are token buckets by key (a project, or a client address):
// each holds up to burst tokens and gains rate of them a second; a request
// takes one. Time comes from the API's clock, so tests move it.
type buckets struct {
	rate  float64
	burst float64

	mu sync.Mutex
	m  map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// maxIdleBuckets is how many buckets are kept before full ones are
// dropped: a full bucket is what a new one would be, so dropping it
// changes no answer, and a flood of addresses cannot grow the map for
// ever.
const maxIdleBuckets = 10000

// take takes one token of key's bucket at now; when there is none it
// reports how long until there is.
func (b *buckets) take(key string, now time.Time) (ok bool, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.refill(key, now)
	if k.tokens >= 1 {
		k.tokens--
		return true, 0
	}
	return false, time.Duration((1 - k.tokens) / b.rate * float64(time.Second))
}

// empty reports whether key's bucket has no token at now, without taking
// one.
func (b *buckets) empty(key string, now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k, ok := b.m[key]
	if !ok {
		return false, 0
	}
	k = b.refill(key, now)
	if k.tokens >= 1 {
		return false, 0
	}
	return true, time.Duration((1 - k.tokens) / b.rate * float64(time.Second))
}

func (b *buckets) refill(key string, now time.Time) *bucket {
	if b.m == nil {
		b.m = map[string]*bucket{}
	}
	k, ok := b.m[key]
	if !ok {
		if len(b.m) >= maxIdleBuckets {
			b.prune(now)
		}
		k = &bucket{tokens: b.burst, at: now}
		b.m[key] = k
		return k
	}
	if d := now.Sub(k.at); d > 0 {
		k.tokens = math.Min(b.burst, k.tokens+d.Seconds()*b.rate)
		k.at = now
	}
	return k
}

// prune drops the buckets that are full again at now.
func (b *buckets) prune(now time.Time) {
	for key, k := range b.m {
		if k.tokens+now.Sub(k.at).Seconds()*b.rate >= b.burst {
			delete(b.m, key)
		}
	}
}

// retryAfter is a wait in whole seconds for Retry-After, at least 1.
func retryAfter(d time.Duration) int64 {
	s := int64(math.Ceil(d.Seconds()))
	if s < 1 {
		return 1
	}
	return s
}
