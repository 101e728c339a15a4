package execution

import (
	"errors"
	"strconv"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/transfer"
	"github.com/agentwire/agentwire/peer"
	rtransfer "github.com/agentwire/agentwire/runtime/transfer"
	"github.com/agentwire/agentwire/wire"
)

// errUnbound refuses an install whose Environment has no binding; it
// cannot happen once beginRefusal admitted the begin.
var errUnbound = &rtransfer.Error{Outcome: "rejected", Code: "invalid_request", Msg: "the Environment has no binding here"}

// prepareRejectedCodes are runtime_prepare_result's rejection codes (E2).
var prepareRejectedCodes = []string{"invalid_request", "resource_unavailable", "runtime_preparation_capacity",
	"runtime_preparation_unsupported", "runtime_preparation_rejected"}

// xferState is the connection's one runtime_prepare transfer: its header,
// its staging, and the chunk in flight. While Session.xfer points at it the
// connection's transfer slot is held.
type xferState struct {
	id       string
	begin    wire.RuntimePrepare
	size     int64               // declared at begin (0 without a body)
	staged   *rtransfer.Staged   // nil for initialize and finalize
	inflight struct{ end int64 } // the offset the staged chunk in flight ends at
	ended    bool                // discarded, or the connection is gone
}

type xferHooks struct{ s *Session }

func prepareStep(f *fsm.Firing[*peer.Event]) (wire.RuntimePrepare, bool) {
	if m := f.Arg.Msg; m != nil && !f.Arg.Sent {
		p, ok := m.Payload.(wire.RuntimePrepare)
		return p, ok
	}
	return wire.RuntimePrepare{}, false
}

// current is the held transfer when it is the instance f steps.
func (s *Session) current(f *fsm.Firing[*peer.Event]) *xferState {
	if x := s.xfer; x != nil && x.id == f.Arg.Key.ID {
		return x
	}
	return nil
}

// GuardSlotFree: no other transfer of this connection is pending or ended
// unknown (daemon-protocol.txt:104: one transfer per connection).
func (h xferHooks) GuardSlotFree(*fsm.Firing[*peer.Event]) bool { return h.s.xfer == nil }

// GuardOffsetMatches holds for the received receipt this Runtime sends
// when it names the end of the chunk it staged.
func (h xferHooks) GuardOffsetMatches(f *fsm.Firing[*peer.Event]) bool {
	r, ok := f.Arg.Msg.Payload.(wire.RuntimePrepareResult)
	x := h.s.current(f)
	return ok && x != nil && r.Offset == x.inflight.end
}

// SendRuntimePrepareResult answers a begin (ready, or rejected with the
// reason this Runtime cannot take it), and ends a transfer whose frame was
// malformed or whose budget ran out with rejected invalid_request. A chunk
// is answered by its staging writer once the bytes are staged.
func (h xferHooks) SendRuntimePrepareResult(f *fsm.Firing[*peer.Event]) error {
	s, d, id := h.s, f.Arg.Driver(), f.Arg.Key.ID
	p, ok := prepareStep(f)
	switch {
	case f.Arg.Msg == nil:
		// decision: the transfer table answers a malformed frame or an
		// expired budget on the transfer's ID with rejected invalid_request
		// (spec/transfer.yaml); the malformed frame gets no answer of its own.
		send(d, id, wire.RuntimePrepareResult{Outcome: "rejected", ErrorCode: "invalid_request"})
	case ok && p.Step == wire.StepBegin:
		if code := s.beginRefusal(p); code != "" {
			send(d, id, wire.RuntimePrepareResult{Outcome: "rejected", ErrorCode: code})
			return nil
		}
		x := &xferState{id: id, begin: p}
		if p.SizeBytes != nil {
			x.size = *p.SizeBytes
		}
		if p.Action == wire.PrepareFile || p.Action == wire.PrepareSkill || p.Action == wire.PreparePlugin {
			x.staged = s.cfg.Area.NewStaged()
		}
		s.xfer = x
		send(d, id, wire.RuntimePrepareResult{Outcome: "ready"})
	}
	return nil
}

// beginRefusal is the rejection code of a begin this Runtime cannot take
// now, or "".
func (s *Session) beginRefusal(p wire.RuntimePrepare) string {
	env := p.EnvironmentID
	switch {
	case !s.cfg.Environments.Has(env):
		// decision: an Environment this Runtime is not configured with has
		// nothing to initialize here: the begin is refused invalid_request
		// before anything is staged, and no other workspace is chosen
		// (daemon-protocol.txt:19, :155).
		return "invalid_request"
	case s.fence.held(env):
		// decision: a quiescing or suspended Environment admits no new
		// mutation (daemon-protocol.txt:96); the transfer is refused as an
		// unavailable resource, which Core may retry after the resume.
		return "resource_unavailable"
	case s.busyExecuting(env):
		// decision: the text is silent on transfers during execution
		// (daemon-protocol.txt:104); as the reference does, an Environment
		// is initialized only while no admission, Run or read of it is
		// active, so an installation never races a Turn using the same
		// files. Work of another Environment uses other files and does not
		// delay it.
		return "resource_unavailable"
	}
	switch p.Action {
	case wire.PrepareFile:
		if _, err := rtransfer.WorkspacePath(p.File.Path); err != nil {
			return "invalid_request"
		}
	case wire.PrepareSkill, wire.PreparePlugin:
		if s.cfg.Area == nil {
			return "runtime_preparation_unsupported"
		}
		if rtransfer.BundleName(bundleName(p)) != nil {
			return "invalid_request"
		}
	case wire.PrepareInitialize:
		if p.Initialization.Action != "configure" {
			// decision: the reference Runtime is not an isolation boundary
			// (daemon-protocol.txt:7) and runs no package manager or setup
			// command on Core's behalf; those initializations are
			// refused as unsupported before anything runs.
			return "runtime_preparation_unsupported"
		}
	}
	if s.cfg.Area == nil && p.Action != wire.PrepareInitialize && p.Action != wire.PrepareFinalize {
		return "runtime_preparation_unsupported"
	}
	return ""
}

// bundleName is where a skill or plugin is installed: the skill's name, or
// the plugin's slot (0 when absent).
func bundleName(p wire.RuntimePrepare) string {
	if p.Action == wire.PreparePlugin {
		slot := int64(0)
		if p.Slot != nil {
			slot = *p.Slot
		}
		return strconv.FormatInt(slot, 10)
	}
	return p.Skill.Name
}

// busyExecuting reports whether an admission, a Run, a workspace read,
// write or export of the Environment env is active on this connection.
func (s *Session) busyExecuting(env string) bool {
	if s.wr.Holds(env) || s.exp.Holds(env) {
		return true
	}
	for _, a := range s.admissions {
		if !a.releasing && !a.transferred && a.env == env {
			return true
		}
	}
	return s.activeIn(env)
}

// activeIn reports whether a Run or a workspace read of env has not
// settled yet.
func (s *Session) activeIn(env string) bool {
	for _, r := range s.runs {
		if !r.settled && r.envID == env {
			return true
		}
	}
	return s.reads.ActiveIn(env)
}

// DoStageChunk stages the chunk off the loop and answers received once its
// bytes are written; a chunk that does not continue the staged bytes, or
// runs past the declared size, ends the transfer as malformed.
func (h xferHooks) DoStageChunk(f *fsm.Firing[*peer.Event]) error {
	s, d, key := h.s, f.Arg.Driver(), f.Arg.Key
	p, _ := prepareStep(f)
	x := s.current(f)
	if x == nil || x.staged == nil {
		// decision: initialize and finalize carry no body
		// (daemon-protocol.txt:104: typed headers without file data), so a
		// chunk for one is malformed.
		return d.Local(key, fsm.EventID(transfer.EventMalformedFrame), nil)
	}
	end := p.Offset + int64(len(p.Data))
	x.inflight.end = end
	staged, size, data := x.staged, x.size, []byte(p.Data)
	s.goNative(func() {
		err := staged.Write(p.Offset, data, size)
		s.post(func(d *peer.Driver) {
			var te *rtransfer.Error
			switch {
			case x.ended:
			case errors.As(err, &te):
				_ = d.Local(key, fsm.EventID(transfer.EventMalformedFrame), nil)
			case err != nil:
				s.cfg.Logger.Warn("staging a transfer chunk failed", "transfer", key.ID, "err", err)
				send(d, key.ID, wire.RuntimePrepareResult{Outcome: "rejected", ErrorCode: "resource_unavailable"})
			default:
				// The receipt confirms staged bytes, not installation
				// (daemon-protocol.txt:104).
				send(d, key.ID, wire.RuntimePrepareResult{Outcome: "received", Offset: end})
			}
		})
	})
	return nil
}

// DoInstall verifies and applies the transfer off the loop and answers
// only after the application (daemon-protocol.txt:104). The staging is
// removed whatever the outcome.
func (h xferHooks) DoInstall(f *fsm.Firing[*peer.Event]) error {
	s, key := h.s, f.Arg.Key
	x := s.current(f)
	if x == nil {
		return nil
	}
	install := s.installer(x)
	s.goNative(func() {
		err := install()
		if x.staged != nil {
			_ = x.staged.Discard()
		}
		s.post(func(d *peer.Driver) {
			var te *rtransfer.Error
			switch {
			case err == nil:
				s.xfer = nil // completed: the slot is free again
				send(d, key.ID, wire.RuntimePrepareResult{Outcome: "completed", SizeBytes: x.size})
			case errors.As(err, &te):
				s.cfg.Logger.Info("transfer refused at commit", "transfer", key.ID, "err", te)
				send(d, key.ID, wire.RuntimePrepareResult{Outcome: te.Outcome, ErrorCode: te.Code})
			default:
				// The installer may have changed something: unknown keeps
				// the slot, and nothing is replayed (daemon-protocol.txt:159).
				s.cfg.Logger.Warn("transfer installation ended uncertain", "transfer", key.ID, "err", err)
				send(d, key.ID, wire.RuntimePrepareResult{Outcome: "unknown", ErrorCode: "runtime_preparation_unconfirmed"})
			}
		})
	})
	return nil
}

// installer is the commit's native work for x, built on the loop.
func (s *Session) installer(x *xferState) func() error {
	p, staged, size := x.begin, x.staged, x.size
	verify := func() error {
		if staged == nil {
			return nil
		}
		return staged.Verify(size, p.SHA256)
	}
	switch p.Action {
	case wire.PrepareFile:
		// The file goes into the workspace of the Environment the begin
		// named (beginRefusal checked the binding), through its os.Root.
		ws, ok := s.cfg.Environments.Lookup(p.EnvironmentID)
		if !ok {
			return func() error { return errUnbound }
		}
		root := ws.Root()
		rel, _ := rtransfer.WorkspacePath(p.File.Path)
		return func() error {
			if err := verify(); err != nil {
				return err
			}
			return rtransfer.InstallFile(root, rel, staged)
		}
	case wire.PrepareSkill, wire.PreparePlugin:
		area, kind, name := s.cfg.Area, rtransfer.KindSkill, bundleName(p)
		if p.Action == wire.PreparePlugin {
			kind = rtransfer.KindPlugin
		}
		return func() error {
			if err := verify(); err != nil {
				return err
			}
			return area.InstallBundle(kind, name, staged)
		}
	}
	// decision: configure and finalize have no native effect in the
	// reference Runtime beyond being recorded: its adapters read no
	// environment variables or capability selections from Core yet
	// (daemon-protocol.txt:104: the Environment contract owns what is
	// prepared), so completing them confirms only that they were received
	// whole and valid.
	return func() error { return nil }
}

// DoDiscardStaged drops the staged bytes and frees the slot.
func (h xferHooks) DoDiscardStaged(f *fsm.Firing[*peer.Event]) error {
	s := h.s
	x := s.current(f)
	if x == nil {
		return nil
	}
	x.ended = true
	s.xfer = nil
	if st := x.staged; st != nil {
		s.goNative(func() { _ = st.Discard() })
	}
	return nil
}

// refusePrepare answers a runtime_prepare the driver refused. A frame that
// addresses the pending transfer ends it as malformed (its one rejected
// result answers the transfer, never the frame itself); a begin over the
// slot is rejected runtime_preparation_capacity; anything else gets
// rejected with the code the table's reason names, or invalid_request.
func (s *Session) refusePrepare(d *peer.Driver, r *peer.Refusal) {
	key := peer.Key{Machine: transfer.Table.Name, ID: r.Msg.ID}
	if x := s.xfer; x != nil && x.id == r.Msg.ID && !x.ended {
		if i, ok := d.Lookup(key); ok && !i.Terminal() {
			_ = d.Local(key, fsm.EventID(transfer.EventMalformedFrame), nil)
			return
		}
	}
	if wire.CheckID(r.Msg.Entry, r.Msg.ID) != nil {
		return // no transfer ID to answer on; the driver logged the frame
	}
	code := reasonCodeOf(r.Err, "invalid_request", prepareRejectedCodes)
	if p, ok := r.Msg.Payload.(wire.RuntimePrepare); ok && p.Step == wire.StepBegin && !s.cfg.Environments.Has(p.EnvironmentID) {
		// A begin naming an Environment this Runtime does not serve is
		// invalid_request whatever else refused it (the slot included), as
		// beginRefusal answers it when the slot is free.
		code = "invalid_request"
	}
	d.Send(peer.Outbound{ID: r.Msg.ID, Refusal: true, Payload: wire.RuntimePrepareResult{Outcome: "rejected", ErrorCode: code}}, nil)
}

// closeTransfer removes the staging of a transfer the connection still
// held when it closed.
func (s *Session) closeTransfer() {
	if x := s.xfer; x != nil && x.staged != nil {
		x.ended = true
		_ = x.staged.Discard()
	}
}
