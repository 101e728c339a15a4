package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm/workspace_write"
	"github.com/agentwire/agentwire/internal/core/envinit"
	"github.com/agentwire/agentwire/wire"
)

// Workspace writes (daemon-protocol.txt:185). Core takes the Session's
// scheduling reservation, durably reserves the write in the store (one
// conditional insert: one held mutation owner per Session), and only then
// sends begin; the body follows in 64 KiB chunks, each awaiting its
// received offset, then commit. Before commit leaves, the store records
// the commit attempt, so a restarted Core knows whether the native writer
// may have run. The workspace_write machine decides every outcome; its
// hooks keep the durable record in step with the state the table moved to.
// A write is never resent or replayed.

// WriteResult is how a write ended, as the machine settled it.
type WriteResult struct {
	MutationID string
	// State is the workspace_write machine's state: completed, rejected,
	// aborted (nothing reached the installer), unknown, or unconfirmed
	// (no receipt within the deadline; a late one may still settle it).
	State string
	// Outcome is the public projection: completed, rejected, aborted or
	// unknown.
	Outcome   string
	ErrorCode string
	Reason    string
	SizeBytes int64
	DeviceID  string
}

// WriteBlockedError: an earlier write of the Session still holds its
// mutation owner (in flight, or with an unknown outcome an operator has
// to resolve).
type WriteBlockedError struct {
	MutationID string
	State      string
}

func (e *WriteBlockedError) Error() string {
	return fmt.Sprintf("gateway: write %s of this Session is unsettled (%s); successors wait for its exact settlement", e.MutationID, e.State)
}

// Errors of WriteWorkspace besides *WriteBlockedError and ErrNoWorkspace.
var (
	// ErrWriteNoDevice: no connected device admits the Session's work.
	ErrWriteNoDevice = errors.New("gateway: no connected device admits the Session's work")
	// ErrWriteTooLarge: the body is over the 50 MiB transfer bound.
	ErrWriteTooLarge = errors.New("gateway: the body is over the 50 MiB workspace write bound")
)

// WriteOptions are a write's optional observers.
type WriteOptions struct {
	// Progress is called with the bytes the Runtime confirmed as staged.
	Progress func(staged, total int64)
	// MutationID, when set, is the write's durable ID (a canonical UUID);
	// otherwise one is minted.
	MutationID string
}

// decision: a workspace write is a successor mutation for the Session's
// Turns too: the Runtime excludes execution while it receives or applies
// a write (daemon-protocol.txt:185), and a write whose receipt is missing
// may still be applying, so no Turn of the Session is claimed while one
// holds the mutation owner (here or, after a restart, in the store), and
// no write starts while a Turn or a read holds the Session.

// WriteWorkspace writes body to path (workspace-relative) in the
// Session's bound workspace. It returns the machine's settlement; a
// settlement other than completed/rejected/aborted keeps the Session's
// mutation owner until an operator resolves it (ResolveWrite). If ctx ends
// first, the write still runs to its settlement and ctx's error is
// returned.
func (g *Gateway) WriteWorkspace(ctx context.Context, sessionID, path string, body []byte, opt WriteOptions) (WriteResult, error) {
	if int64(len(body)) > wire.MaxTransferBytes {
		return WriteResult{}, ErrWriteTooLarge
	}
	ses, err := g.cfg.Store.GetSession(ctx, sessionID)
	if err != nil {
		return WriteResult{}, err
	}
	env, err := g.cfg.Store.GetEnvironment(ctx, ses.EnvironmentID)
	if err != nil {
		return WriteResult{}, err
	}
	envType, err := wire.ParseEnvironmentType(env.Type)
	if err != nil || !envType.Local() || len(env.Binding) == 0 {
		return WriteResult{}, ErrNoWorkspace
	}
	var binding wire.LocalEnvironment
	if err := json.Unmarshal(env.Binding, &binding); err != nil || binding.ID == "" {
		return WriteResult{}, ErrNoWorkspace
	}
	id := opt.MutationID
	if id == "" {
		id = newUUID()
	}
	sum := sha256.Sum256(body)
	size := int64(len(body))
	begin := wire.WorkspaceWrite{Step: wire.StepBegin, EnvironmentID: binding.ID, SessionID: envinit.SessionUUID(sessionID),
		Path: path, SizeBytes: &size, SHA256: hex.EncodeToString(sum[:])}
	if err := begin.Validate(); err != nil {
		return WriteResult{}, &ReadError{Code: "invalid_request", Rejected: true, Detail: boundedErr(err)}
	}
	if w, err := g.cfg.Store.UnsettledWorkspaceWrite(ctx, sessionID); err == nil {
		return WriteResult{}, &WriteBlockedError{MutationID: w.MutationID, State: w.State}
	}
	g.awaitFinishedTurns(ctx, sessionID)
	if !g.holdForWrite(sessionID, env.ID) {
		return WriteResult{}, ErrSessionBusy
	}
	p := turnPlan{session: ses, env: env, admit: wire.AdmissionInput{Environment: envType}}
	if p.required, err = wire.RequiredCapabilities(p.admit); err != nil {
		g.dropWriteHold(sessionID)
		return WriteResult{}, err
	}
	var c *conn
	for _, cand := range g.candidates(p) {
		if decl, ok := cand.snapshot(); ok && g.owns(cand) && g.placeable(ctx, cand, p) {
			if _, ok := admits(decl, p); ok {
				c = cand
				break
			}
		}
	}
	if c == nil {
		g.dropWriteHold(sessionID)
		return WriteResult{}, ErrWriteNoDevice
	}
	if o := g.initialize(c, env, sessionID); !o.ok { // transfer.go
		g.dropWriteHold(sessionID)
		return WriteResult{}, &ReadError{Code: ReadInitializationFailed, Detail: "the Environment's initialization ended " + o.status.Outcome + " " + o.status.ErrorCode}
	}
	// The durable reservation, under the Session's reservation and before
	// anything is sent (daemon-protocol.txt:185).
	first := workspace_write.StateBeginning.String()
	err = g.cfg.Store.ReserveWorkspaceWrite(ctx, store.WorkspaceWrite{MutationID: id, SessionID: sessionID, Path: path,
		CreatedAt: g.cfg.Clock.Now().UTC(), WriteDetail: store.WriteDetail{State: first, DeviceID: c.deviceID, OwnerEpoch: c.epoch, SizeBytes: size, SHA256: begin.SHA256}})
	if err != nil {
		g.dropWriteHold(sessionID)
		if errors.Is(err, store.ErrConflict) {
			if w, err2 := g.cfg.Store.UnsettledWorkspaceWrite(ctx, sessionID); err2 == nil {
				return WriteResult{}, &WriteBlockedError{MutationID: w.MutationID, State: w.State}
			}
		}
		return WriteResult{}, err
	}
	c.log.Info("gateway: workspace write reserved", "mutation_id", id, "session_id", sessionID, "size_bytes", size)
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()

	out := make(chan WriteResult, 1)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		r := c.writes.Run(g.ctx, pc, id, sessionID, first, begin, body, opt.Progress)
		res := WriteResult{MutationID: id, DeviceID: c.deviceID, State: r.State, Outcome: publicWriteOutcome(r.State),
			ErrorCode: r.ErrorCode, Reason: r.Reason, SizeBytes: r.SizeBytes}
		// The Session's reservation goes once the machine settled the
		// write; the durable owner stays while the outcome is unknown.
		g.dropWriteHold(sessionID)
		out <- res
	}()
	select {
	case res := <-out:
		return res, nil
	case <-ctx.Done():
		c.writes.ObserverCancelled(g.ctx, pc, id)
		return WriteResult{MutationID: id}, ctx.Err()
	}
}

func publicWriteOutcome(state string) string {
	switch state {
	case workspace_write.StateCompleted.String(), workspace_write.StateRejected.String(), workspace_write.StateAborted.String():
		return state
	}
	return workspace_write.StateUnknown.String()
}
