package main

import (
	"flag"
	"fmt"

	"github.com/agentwire/agentwire/internal/core/api"
	"github.com/agentwire/agentwire/internal/core/gateway"
)

// quotaFlagSet is core serve's per-project quotas (docs/limits.md); 0
// sets no bound.
type quotaFlagSet struct {
	sessions, queuedTurns, burst *int
	storeBytes, journalBytes     *int64
	rate                         *float64
}

func quotaFlags(fs *flag.FlagSet) quotaFlagSet {
	d := api.DefaultQuotas()
	return quotaFlagSet{
		sessions:     fs.Int("quota-sessions", d.Sessions, "Sessions a project may have; one more is refused 429 (0: no limit)"),
		queuedTurns:  fs.Int("quota-queued-turns", d.QueuedTurns, "Turns of a project that may wait queued; one more is refused 429 (0: no limit)"),
		storeBytes:   fs.Int64("quota-store-bytes", d.StoreBytes, "bytes a project may store (options, inputs, journals; an estimate); a request that would pass it is refused 429 (0: no limit)"),
		rate:         fs.Float64("quota-rate", d.Rate, "API requests a second per project key, and per client address for requests that fail authentication (0: no limit)"),
		burst:        fs.Int("quota-burst", d.Burst, "API requests a project key may send at once before --quota-rate applies"),
		journalBytes: fs.Int64("quota-journal-bytes", gateway.DefaultJournalLimit, "journal bytes one Turn may keep; the Run frame that would pass it fails the Turn journal_limit, keeping what was journaled (0: no limit)"),
	}
}

func (q quotaFlagSet) check() error {
	switch {
	case *q.sessions < 0, *q.queuedTurns < 0, *q.burst < 0, *q.storeBytes < 0, *q.journalBytes < 0, *q.rate < 0:
		return fmt.Errorf("the --quota-* flags take 0 (no limit) or a positive number")
	case *q.rate > 0 && *q.burst == 0:
		return fmt.Errorf("--quota-burst must be positive with --quota-rate %g", *q.rate)
	}
	return nil
}

func (q quotaFlagSet) api() api.Quotas {
	return api.Quotas{Sessions: *q.sessions, QueuedTurns: *q.queuedTurns, StoreBytes: *q.storeBytes, Rate: *q.rate, Burst: *q.burst}
}
