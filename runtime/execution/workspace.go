package execution

import (
	"errors"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/peer"
	"github.com/agentwire/agentwire/peer/guard"
	"github.com/agentwire/agentwire/runtime/workspace"
	"github.com/agentwire/agentwire/wire"
)

// MaxReadsInFlight bounds the workspace reads one connection runs at once;
// a read over the bound is rejected read_capacity before it touches the
// directory.
//
// decision: byte and directory reads share one capacity
// (daemon-protocol.txt:179); four keeps at most 4 MiB of read data in
// memory per connection.
const MaxReadsInFlight = 4

// readState is one workspace read this connection dispatched, by operation ID.
type readState struct {
	owner     string // "handle:<handle>" or "run:<run ID>"
	env       string // the Environment whose workspace it reads
	settled   bool   // its result was sent (or the connection is gone)
	forgotten bool   // the driver forgot its instance (forget.go)
}

type readHooks struct{ s *Session }

func readRequest(f *fsm.Firing[*peer.Event]) (wire.WorkspaceRead, bool) {
	if m := f.Arg.Msg; m != nil {
		p, ok := m.Payload.(wire.WorkspaceRead)
		return p, ok
	}
	return wire.WorkspaceRead{}, false
}

// readOwner finds the owner a read targets: a live preparation handle of
// this connection, or a live Run that took a handle over. It returns the
// owner key and the owner's exact Environment ID ("" when it has none), or
// ok false when no such owner lives here.
//
// decision: a Run started by prompt_request took over no preparation
// handle, so it is no read target (daemon-protocol.txt:177: the handle, or
// the Run it was transferred to).
func (s *Session) readOwner(p wire.WorkspaceRead) (owner, env string, ok bool) {
	if p.Handle != "" {
		for _, a := range s.admissions {
			if a.handle == p.Handle && !a.releasing && !a.transferred {
				return "handle:" + a.handle, envOf(a.cfg.Configuration), true
			}
		}
		return "", "", false
	}
	r := s.runs[p.RunID]
	if r == nil || r.settled || r.env == nil {
		return "", "", false
	}
	return "run:" + r.id, *r.env, true
}

func envOf(c wire.PromptRequest) string {
	if c.LocalEnvironment == nil {
		return ""
	}
	return c.LocalEnvironment.ID
}

// readRefusal is the rejection code for a read its owner does not admit.
func (s *Session) readRefusal(p wire.WorkspaceRead) string {
	owner, env, ok := s.readOwner(p)
	switch {
	case !s.cfg.Environments.Has(p.EnvironmentID):
		// decision: a read naming an Environment this Runtime is not
		// configured with is a malformed request here, whatever it
		// targets: no owner of this connection can be bound to it, and
		// the Runtime never serves another workspace in its place
		// (daemon-protocol.txt:19, :179).
		return "invalid_request"
	case !ok || s.fenced[owner]:
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

// GuardOwnerReadable: the target lives on this connection, is bound to the
// exact Environment, is not closed and not fenced by an unknown read.
func (h readHooks) GuardOwnerReadable(f *fsm.Firing[*peer.Event]) bool {
	p, ok := readRequest(f)
	if !ok {
		return false
	}
	owner, env, ok := h.s.readOwner(p)
	return ok && !h.s.fenced[owner] && env != "" && env == p.EnvironmentID && h.s.cfg.Environments.Has(env)
}

// GuardCloseAcknowledged holds for the results this Runtime sends: it
// answers only after the native close returned.
func (h readHooks) GuardCloseAcknowledged(f *fsm.Firing[*peer.Event]) bool {
	return guard.CloseAcknowledged(f.Arg.Payload())
}

// DoReadNative reads off the loop and answers once the file or directory
// is closed again. A read is never retried (daemon-protocol.txt:181).
func (h readHooks) DoReadNative(f *fsm.Firing[*peer.Event]) error {
	s, d := h.s, f.Arg.Driver()
	p, _ := readRequest(f)
	opID := f.Arg.Key.ID
	owner, env, _ := s.readOwner(p)
	st := &readState{owner: owner, env: env}
	s.reads[opID] = st
	answer := func(d *peer.Driver, r wire.WorkspaceReadResult) {
		st.settled = true
		s.readsInFlight--
		send(d, opID, r)
		if st.forgotten && s.reads[opID] == st {
			delete(s.reads, opID)
		}
	}
	s.readsInFlight++
	// The owner's Environment, which owner_readable matched with the
	// request's: a read never reaches another Environment's workspace.
	ws, bound := s.cfg.Environments.Lookup(env)
	switch {
	case !bound:
		answer(d, wire.WorkspaceReadResult{Outcome: "rejected", ErrorCode: "invalid_request"})
		return nil
	case s.readsInFlight > MaxReadsInFlight:
		answer(d, wire.WorkspaceReadResult{Outcome: "rejected", ErrorCode: "read_capacity"})
		return nil
	}
	s.goNative(func() {
		r := readWorkspace(ws, p)
		if !s.post(func(d *peer.Driver) { answer(d, r) }) {
			s.cfg.Logger.Warn("workspace read finished after the connection closed; not answered", "operation", opID)
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
func (h readHooks) DoFenceOwner(f *fsm.Firing[*peer.Event]) error {
	if st := h.s.reads[f.Arg.Key.ID]; st != nil && st.owner != "" {
		h.s.fenced[st.owner] = true
	}
	return nil
}

// DoCloseAdmission has nothing to do here: readOwner admits no read on a
// released, transferred or settled owner, and the dispatched read keeps
// running to its answer.
func (h readHooks) DoCloseAdmission(*fsm.Firing[*peer.Event]) error { return nil }

// refuseRead answers a workspace_read its machine refused. A duplicate of
// a read this connection already dispatched gets no answer of its own: the
// one result of that operation ID answers it, and a second result would
// settle Core's waiter twice (daemon-protocol.txt:181).
func (s *Session) refuseRead(d *peer.Driver, r *peer.Refusal, p wire.WorkspaceRead) {
	if _, dup := s.reads[r.Msg.ID]; dup {
		s.cfg.Logger.Warn("duplicate workspace_read refused without a second result", "operation", r.Msg.ID)
		return
	}
	d.Send(peer.Outbound{ID: r.Msg.ID, Refusal: true, Payload: wire.WorkspaceReadResult{
		Outcome: "rejected", ErrorCode: s.readRefusal(p)}}, nil)
}
