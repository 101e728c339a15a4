package storetest

import (
	"context"
	"time"

	"github.com/agentwire/agentwire/core/store"
)

// The replica and lease writes of a Failing store (store.Replicas).

func (f *Failing) RegisterReplica(ctx context.Context, r store.Replica) error {
	if err := f.check("RegisterReplica"); err != nil {
		return err
	}
	return f.Store.RegisterReplica(ctx, r)
}

func (f *Failing) AcquireLease(ctx context.Context, deviceID, replicaID string, at, until time.Time) (uint64, error) {
	if err := f.check("AcquireLease"); err != nil {
		return 0, err
	}
	return f.Store.AcquireLease(ctx, deviceID, replicaID, at, until)
}

func (f *Failing) RenewLeases(ctx context.Context, replicaID string, at, until time.Time) ([]store.Lease, error) {
	if err := f.check("RenewLeases"); err != nil {
		return nil, err
	}
	return f.Store.RenewLeases(ctx, replicaID, at, until)
}

func (f *Failing) RetireReplicas(ctx context.Context, url, except string, at time.Time) (int, error) {
	if err := f.check("RetireReplicas"); err != nil {
		return 0, err
	}
	return f.Store.RetireReplicas(ctx, url, except, at)
}

func (f *Failing) ReapLease(ctx context.Context, deviceID string, epoch uint64, replicaID string, at time.Time) error {
	if err := f.check("ReapLease"); err != nil {
		return err
	}
	return f.Store.ReapLease(ctx, deviceID, epoch, replicaID, at)
}
