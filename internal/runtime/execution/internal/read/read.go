// Package read is the workspace_read lifecycle on the Runtime's side of
// one connection (daemon-protocol.txt:177–183): the reads the connection
// dispatched, the owners an unknown read fenced, the machine's Runtime
// hooks and the refusals. A read runs off the loop and is answered once
// the file or directory is closed again; it is never retried. Which owners
// live on the connection (preparation handles, Runs) comes through Host.
package read

import (
	"errors"

	"github.com/agentwire/agentwire/internal/runtime/execution/internal/conn"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/workspace_read"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/peer/guard"
	"github.com/agentwire/agentwire/internal/runtime/workspace"
	"github.com/agentwire/agentwire/wire"
)

// MaxInFlight bounds the workspace reads one connection runs at once; a
// read over the bound is rejected read_capacity before it touches the
// directory.
//
// decision: byte and directory reads share one capacity
// (daemon-protocol.txt:179); four keeps at most 4 MiB of read data in
// memory per connection.
const MaxInFlight = 4

// Host is what the read lifecycle needs of its connection.
type Host interface {
	conn.Loop
	// Owner finds the owner a read targets: a live preparation handle of
	// this connection, or a live Run that took a handle over. It returns
	// the owner key ("handle:<h>" or "run:<id>") and the owner's exact
	// Environment ID ("" when it has none), or ok false when no such owner
	// lives here.
	Owner(p wire.WorkspaceRead) (owner, env string, ok bool)
	// Workspace is the configured workspace of env.
	Workspace(env string) (*workspace.Workspace, bool)
}

// Reads are one connection's dispatched reads and fenced owners; touched
// on the connection's loop only.
type Reads struct {
	host     Host
	reads    map[string]*state // by operation ID
	inFlight int
	fenced   map[string]bool // owners fenced by an unknown read
}

// New returns the read lifecycle of one connection.
func New(h Host) *Reads {
	return &Reads{host: h, reads: map[string]*state{}, fenced: map[string]bool{}}
}

// state is one read this connection dispatched.
type state struct {
	owner     string
	env       string // the Environment whose workspace it reads
	settled   bool   // its result was sent (or the connection is gone)
	forgotten bool   // the driver forgot its instance
}

// Dispatched reports whether a read of this operation ID was dispatched
// and is still remembered: a repeated request gets no second result.
func (r *Reads) Dispatched(opID string) bool {
	_, ok := r.reads[opID]
	return ok
}

// ActiveIn reports whether a read of env is still running.
func (r *Reads) ActiveIn(env string) bool {
	for _, st := range r.reads {
		if !st.settled && st.env == env {
			return true
		}
	}
	return false
}

// Len is the number of reads remembered (tests).
func (r *Reads) Len() int { return len(r.reads) }

// Unfence forgets owner's fence: the owner itself is gone.
func (r *Reads) Unfence(owner string) { delete(r.fenced, owner) }

// Forgot drops the read the driver forgot, once its result went out.
func (r *Reads) Forgot(opID string) {
	if st := r.reads[opID]; st != nil {
		st.forgotten = true
		if st.settled {
			delete(r.reads, opID)
		}
	}
}

func request(f *fsm.Firing[*peer.Event]) (wire.WorkspaceRead, bool) {
	if m := f.Arg.Msg; m != nil {
		p, ok := m.Payload.(wire.WorkspaceRead)
		return p, ok
	}
	return wire.WorkspaceRead{}, false
}

func (r *Reads) bound(env string) bool {
	_, ok := r.host.Workspace(env)
	return ok
}

// refusal is the rejection code for a read its owner does not admit.
func (r *Reads) refusal(p wire.WorkspaceRead) string {
	owner, env, ok := r.host.Owner(p)
	switch {
	case !r.bound(p.EnvironmentID):
		// decision: a read naming an Environment this Runtime is not
		// configured with is a malformed request here, whatever it
		// targets: no owner of this connection can be bound to it, and
		// the Runtime never serves another workspace in its place
		// (daemon-protocol.txt:19, :179).
		return "invalid_request"
	case !ok || r.fenced[owner]:
		// decision: an owner that is unknown here, released, transferred,
		// settled or fenced is an unavailable resource; not_found is kept
		// for the path (daemon-protocol.txt:177, :181).
		return "resource_unavailable"
	case env == "" || env != p.EnvironmentID:
		// decision: the Environment identity must match exactly
		// (daemon-protocol.txt:177); a different one is a malformed
		// request for this owner, not a missing resource.
		return "invalid_request"
	}
	return "resource_unavailable"
}

// Refuse answers a workspace_read its machine refused. A duplicate of a
// read this connection already dispatched gets no answer of its own: the
// one result of that operation ID answers it, and a second result would
// settle Core's waiter twice (daemon-protocol.txt:181).
func (r *Reads) Refuse(d *peer.Driver, ref *peer.Refusal, p wire.WorkspaceRead) {
	if r.Dispatched(ref.Msg.ID) {
		r.host.Logger().Warn("duplicate workspace_read refused without a second result", "operation", ref.Msg.ID)
		return
	}
	d.Send(peer.Outbound{ID: ref.Msg.ID, Refusal: true, Payload: wire.WorkspaceReadResult{
		Outcome: "rejected", ErrorCode: r.refusal(p)}}, nil)
}

// Hooks returns the workspace_read machine's Runtime hooks over r.
func (r *Reads) Hooks() workspace_read.RuntimeHooks[*peer.Event] { return hooks{r} }

type hooks struct{ r *Reads }

// GuardOwnerReadable: the target lives on this connection, is bound to the
// exact Environment, is not closed and not fenced by an unknown read.
func (h hooks) GuardOwnerReadable(f *fsm.Firing[*peer.Event]) bool {
	p, ok := request(f)
	if !ok {
		return false
	}
	owner, env, ok := h.r.host.Owner(p)
	return ok && !h.r.fenced[owner] && env != "" && env == p.EnvironmentID && h.r.bound(env)
}

// GuardCloseAcknowledged holds for the results this Runtime sends: it
// answers only after the native close returned.
func (h hooks) GuardCloseAcknowledged(f *fsm.Firing[*peer.Event]) bool {
	return guard.CloseAcknowledged(f.Arg.Payload())
}

// DoReadNative reads off the loop and answers once the file or directory
// is closed again. A read is never retried (daemon-protocol.txt:181).
func (h hooks) DoReadNative(f *fsm.Firing[*peer.Event]) error {
	r, d := h.r, f.Arg.Driver()
	p, _ := request(f)
	opID := f.Arg.Key.ID
	owner, env, _ := r.host.Owner(p)
	st := &state{owner: owner, env: env}
	r.reads[opID] = st
	answer := func(d *peer.Driver, res wire.WorkspaceReadResult) {
		st.settled = true
		r.inFlight--
		d.Send(peer.Outbound{ID: opID, Payload: res}, nil)
		if st.forgotten && r.reads[opID] == st {
			delete(r.reads, opID)
		}
	}
	r.inFlight++
	// The owner's Environment, which owner_readable matched with the
	// request's: a read never reaches another Environment's workspace.
	ws, bound := r.host.Workspace(env)
	switch {
	case !bound:
		answer(d, wire.WorkspaceReadResult{Outcome: "rejected", ErrorCode: "invalid_request"})
		return nil
	case r.inFlight > MaxInFlight:
		answer(d, wire.WorkspaceReadResult{Outcome: "rejected", ErrorCode: "read_capacity"})
		return nil
	}
	r.host.Go(func() {
		res := readWorkspace(ws, p)
		if !r.host.Post(func(d *peer.Driver) { answer(d, res) }) {
			r.host.Logger().Warn("workspace read finished after the connection closed; not answered", "operation", opID)
		}
	})
	return nil
}

// readWorkspace runs one read and shapes its result.
func readWorkspace(ws *workspace.Workspace, p wire.WorkspaceRead) wire.WorkspaceReadResult {
	var res wire.WorkspaceReadResult
	var err error
	if p.Operation == wire.ReadDirectory {
		var l workspace.Listing
		if l, err = ws.ReadDir(p.Path, int(p.MaxEntries)); err == nil {
			truncated := l.Truncated
			res.Directory = &wire.WorkspaceDirectory{Entries: l.Entries, Truncated: &truncated}
		}
	} else {
		var b workspace.Bytes
		if b, err = ws.ReadFile(p.Path, p.MaxBytes); err == nil {
			res.Data, res.Truncated = b.Data, b.Truncated
		}
	}
	var we *workspace.Error
	switch {
	case err == nil:
		res.Outcome, res.CloseAcknowledged = "completed", true
		return res
	case errors.As(err, &we):
		return wire.WorkspaceReadResult{Outcome: we.Outcome, ErrorCode: we.Code}
	}
	return wire.WorkspaceReadResult{Outcome: "unknown", ErrorCode: "read_unconfirmed"}
}

// DoFenceOwner: after an unknown read its owner admits no other read.
func (h hooks) DoFenceOwner(f *fsm.Firing[*peer.Event]) error {
	if st := h.r.reads[f.Arg.Key.ID]; st != nil && st.owner != "" {
		h.r.fenced[st.owner] = true
	}
	return nil
}

// DoCloseAdmission has nothing to do here: Owner admits no read on a
// released, transferred or settled owner, and the dispatched read keeps
// running to its answer.
func (h hooks) DoCloseAdmission(*fsm.Firing[*peer.Event]) error { return nil }
