package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/agentwire/agentwire/core/store"
)

// Replicas and device owner leases (store.Replicas). The memory store is
// one process's, so it has one replica at a time in practice; it keeps
// the same rules so the conformance suite holds for it too.

type leaseKey struct {
	device string
	epoch  uint64
}

type replicaRec struct {
	store.Replica
	retired bool
	order   int
}

func (s *Store) RegisterReplica(ctx context.Context, r store.Replica) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.replicas == nil {
		s.replicas = map[string]*replicaRec{}
	}
	if r.ID == "" {
		return store.ErrInvalid
	}
	if _, ok := s.replicas[r.ID]; ok {
		return store.ErrConflict
	}
	r.StartedAt, r.HeartbeatAt = r.StartedAt.UTC().Truncate(time.Millisecond), r.HeartbeatAt.UTC().Truncate(time.Millisecond)
	s.replicas[r.ID] = &replicaRec{Replica: r, order: len(s.replicas)}
	return nil
}

func (s *Store) ListReplicas(ctx context.Context) ([]store.Replica, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var recs []*replicaRec
	for _, r := range s.replicas {
		if !r.retired {
			recs = append(recs, r)
		}
	}
	slices.SortFunc(recs, func(a, b *replicaRec) int {
		if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
			return c
		}
		return a.order - b.order
	})
	out := make([]store.Replica, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.Replica)
	}
	return out, nil
}

func (s *Store) AcquireLease(ctx context.Context, deviceID, replicaID string, at, until time.Time) (uint64, error) {
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	return s.acquire(deviceID, replicaID, at, until), nil
}

// acquire takes a new epoch of the device with s.mu held.
func (s *Store) acquire(deviceID, replicaID string, at, until time.Time) uint64 {
	d := s.devices[deviceID]
	d.ID = deviceID
	d.OwnerEpoch++
	d.ReplicaID = replicaID
	d.Connected, d.Declaration, d.LastSeen = true, nil, at
	s.devices[deviceID] = d
	if s.leases == nil {
		s.leases = map[leaseKey]*store.Lease{}
	}
	s.leases[leaseKey{deviceID, d.OwnerEpoch}] = &store.Lease{DeviceID: deviceID, Epoch: d.OwnerEpoch, ReplicaID: replicaID, Expires: until}
	return d.OwnerEpoch
}

func (s *Store) RenewLeases(ctx context.Context, replicaID string, at, until time.Time) ([]store.Lease, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if r := s.replicas[replicaID]; r != nil {
		r.HeartbeatAt = at
	}
	var out []store.Lease
	for _, l := range s.leases {
		if l.ReplicaID != replicaID || l.Ended || expired(l, at) || s.devices[l.DeviceID].OwnerEpoch != l.Epoch {
			continue
		}
		l.Expires = until
		out = append(out, *l)
	}
	sortLeases(out)
	return out, nil
}

func expired(l *store.Lease, at time.Time) bool {
	return !l.Expires.IsZero() && !l.Expires.After(at)
}

func sortLeases(ls []store.Lease) {
	slices.SortFunc(ls, func(a, b store.Lease) int {
		return cmp.Or(a.Expires.Compare(b.Expires), cmp.Compare(a.DeviceID, b.DeviceID), cmp.Compare(a.Epoch, b.Epoch))
	})
}

func (s *Store) RetireReplicas(ctx context.Context, url, except string, at time.Time) (int, error) {
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	gone := map[string]bool{}
	for id, r := range s.replicas {
		if id != except && (url == "" || r.URL == url) {
			r.retired = true
			gone[id] = true
		}
	}
	n := 0
	for _, l := range s.leases {
		// A lease of no replica (AcquireOwner) belongs to a Core that
		// owned the store alone: retiring all retires it too.
		if l.Ended || l.ReplicaID == except || (url != "" && !gone[l.ReplicaID]) {
			continue
		}
		if l.Expires.IsZero() || l.Expires.After(at) {
			l.Expires = at
		}
		n++
	}
	return n, nil
}

func (s *Store) ExpiredLeases(ctx context.Context, at time.Time) ([]store.Lease, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.Lease
	for _, l := range s.leases {
		if !l.Ended && expired(l, at) {
			out = append(out, *l)
		}
	}
	sortLeases(out)
	return out, nil
}

func (s *Store) ReapLease(ctx context.Context, deviceID string, epoch uint64, replicaID string, at time.Time) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	l := s.leases[leaseKey{deviceID, epoch}]
	switch {
	case l == nil:
		return store.ErrNotFound
	case l.Ended || !expired(l, at):
		return store.ErrStale
	}
	l.Ended, l.ReapedBy = true, replicaID
	if d := s.devices[deviceID]; d.OwnerEpoch == epoch {
		d.Connected, d.Declaration, d.LastSeen = false, nil, at
		s.devices[deviceID] = d
	}
	return nil
}

// endLease marks the epoch's lease released, with s.mu held.
func (s *Store) endLease(deviceID string, epoch uint64) {
	if l := s.leases[leaseKey{deviceID, epoch}]; l != nil {
		l.Ended = true
	}
}
