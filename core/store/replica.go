package store

import (
	"context"
	"time"
)

// Replicas is the part of a Store that lets several Core processes
// (replicas) share it: each replica records itself, every device owner
// lease names the replica that holds it and when it expires, and the
// leases of a replica that stopped renewing them are ended exactly once
// by whichever live replica reaps them first (docs/deployment.md).
//
// A lease is one owner epoch of one device (AcquireOwner's epoch): a
// newer connection of the device takes a new epoch, and the older lease is
// then no longer renewed, so it expires. A lease taken with a zero
// expiry (AcquireOwner, a Core that shares its store with nobody) never
// expires until its replica is retired.
type Replicas interface {
	// RegisterReplica records a replica at its start; ErrConflict when
	// its ID is taken.
	RegisterReplica(ctx context.Context, r Replica) error
	// ListReplicas lists the replicas not retired, oldest first.
	ListReplicas(ctx context.Context) ([]Replica, error)
	// AcquireLease is AcquireOwner for a replica: the new epoch's lease is
	// held by replicaID until `until` (the zero time: no expiry).
	AcquireLease(ctx context.Context, deviceID, replicaID string, at, until time.Time) (uint64, error)
	// RenewLeases records the replica's heartbeat at `at` and extends to
	// until every unended lease it holds whose epoch still owns its device
	// and has not expired at `at`; it returns those leases. A lease of the
	// replica missing from the answer is lost: a newer epoch took the
	// device, or the lease expired or was reaped.
	RenewLeases(ctx context.Context, replicaID string, at, until time.Time) ([]Lease, error)
	// RetireReplicas retires every replica other than except whose URL is
	// url (with url "", every replica other than except) and makes its
	// unended leases expire at `at`; it returns how many leases it
	// expired. A replica restarted at the same internal URL retires the
	// process it replaces; a Core that owns its store alone retires all.
	RetireReplicas(ctx context.Context, url, except string, at time.Time) (int, error)
	// ExpiredLeases lists the unended leases whose expiry is at or before
	// at, oldest first.
	ExpiredLeases(ctx context.Context, at time.Time) ([]Lease, error)
	// ReapLease ends an expired lease on behalf of replicaID, one
	// conditional write: ErrStale when the lease is ended already (another
	// replica reaped it, or its connection released it) or has not
	// expired at `at`; ErrNotFound without such a lease. The device is
	// marked offline when that epoch still owns it.
	ReapLease(ctx context.Context, deviceID string, epoch uint64, replicaID string, at time.Time) error
}

// Replica is one Core process sharing the store.
type Replica struct {
	// ID is new at each process start.
	ID string
	// URL is where other replicas reach this one's public API
	// (forwarded requests, docs/deployment.md).
	URL         string
	StartedAt   time.Time
	HeartbeatAt time.Time
}

// Lease is the owner lease of one epoch of a device.
type Lease struct {
	DeviceID  string
	Epoch     uint64
	ReplicaID string
	// Expires is when the lease ends unless renewed; zero: never.
	Expires time.Time
	// Ended is set once the connection released the lease or a replica
	// reaped it; ReapedBy names the reaper.
	Ended    bool
	ReapedBy string
}
