// Package transfer is the transfer lifecycle on the Runtime's side of
// one connection (daemon-protocol.txt:104): the connection's one
// runtime_prepare transfer, its staging, the machine's Runtime hooks, the
// installer's run and the refusals. What a transfer needs of the
// connection (its workspaces and install area, whether the Environment is
// fenced or busy, its goroutines and loop) comes through Host.
package transfer

import (
	"errors"
	"strconv"

	"github.com/agentwire/agentwire/internal/runtime/execution/internal/conn"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/transfer"
	"github.com/agentwire/agentwire/internal/peer"
	rtransfer "github.com/agentwire/agentwire/internal/runtime/transfer"
	"github.com/agentwire/agentwire/internal/runtime/workspace"
	"github.com/agentwire/agentwire/wire"
)

// Host is what the transfer lifecycle needs of its connection.
type Host interface {
	conn.Loop
	// Workspace is the configured workspace of env.
	Workspace(env string) (*workspace.Workspace, bool)
	// Area stages bodies and installs bundles; nil refuses every body.
	Area() *rtransfer.Area
	// Fenced reports whether a suspension holds env.
	Fenced(env string) bool
	// Busy reports whether an admission, a Run, a workspace read, write
	// or export of env is active on the connection.
	Busy(env string) bool
}

// Transfer is the transfer lifecycle of one connection; touched on the
// connection's loop only (Close after the loop ended).
type Transfer struct {
	host Host
	x    *state // the transfer holding the connection's slot
}

// New returns the transfer lifecycle of one connection.
func New(h Host) *Transfer { return &Transfer{host: h} }

// Holds reports whether the transfer holding the slot goes into env.
func (t *Transfer) Holds(env string) bool { return t.x != nil && t.x.begin.EnvironmentID == env }

// errUnbound refuses an install whose Environment has no binding; it
// cannot happen once beginRefusal admitted the begin.
var errUnbound = &rtransfer.Error{Outcome: "rejected", Code: "invalid_request", Msg: "the Environment has no binding here"}

// prepareRejectedCodes are runtime_prepare_result's rejection codes (E2).
var prepareRejectedCodes = []string{"invalid_request", "resource_unavailable", "runtime_preparation_capacity",
	"runtime_preparation_unsupported", "runtime_preparation_rejected"}

// state is the connection's one runtime_prepare transfer: its header,
// its staging, and the chunk in flight. While Transfer.x points at it the
// connection's transfer slot is held.
type state struct {
	id       string
	begin    wire.RuntimePrepare
	size     int64               // declared at begin (0 without a body)
	staged   *rtransfer.Staged   // nil for initialize and finalize
	inflight struct{ end int64 } // the offset the staged chunk in flight ends at
	ended    bool                // discarded, or the connection is gone
}

// Hooks returns the transfer machine's Runtime hooks over t.
func (t *Transfer) Hooks() transfer.RuntimeHooks[*peer.Event] { return hooks{t} }

type hooks struct{ t *Transfer }

func prepareStep(f *fsm.Firing[*peer.Event]) (wire.RuntimePrepare, bool) {
	if m := f.Arg.Msg; m != nil && !f.Arg.Sent {
		p, ok := m.Payload.(wire.RuntimePrepare)
		return p, ok
	}
	return wire.RuntimePrepare{}, false
}

// current is the held transfer when it is the instance f steps.
func (t *Transfer) current(f *fsm.Firing[*peer.Event]) *state {
	if x := t.x; x != nil && x.id == f.Arg.Key.ID {
		return x
	}
	return nil
}

// GuardSlotFree: no other transfer of this connection is pending or ended
// unknown (daemon-protocol.txt:104: one transfer per connection).
func (h hooks) GuardSlotFree(*fsm.Firing[*peer.Event]) bool { return h.t.x == nil }

// GuardOffsetMatches holds for the received receipt this Runtime sends
// when it names the end of the chunk it staged.
func (h hooks) GuardOffsetMatches(f *fsm.Firing[*peer.Event]) bool {
	r, ok := f.Arg.Msg.Payload.(wire.RuntimePrepareResult)
	x := h.t.current(f)
	return ok && x != nil && r.Offset == x.inflight.end
}

// SendRuntimePrepareResult answers a begin (ready, or rejected with the
// reason this Runtime cannot take it), and ends a transfer whose frame was
// malformed or whose budget ran out with rejected invalid_request. A chunk
// is answered by its staging writer once the bytes are staged.
func (h hooks) SendRuntimePrepareResult(f *fsm.Firing[*peer.Event]) error {
	t, d, id := h.t, f.Arg.Driver(), f.Arg.Key.ID
	p, ok := prepareStep(f)
	switch {
	case f.Arg.Msg == nil:
		// decision: the transfer table answers a malformed frame or an
		// expired budget on the transfer's ID with rejected invalid_request
		// (spec/transfer.yaml); the malformed frame gets no answer of its own.
		send(d, id, wire.RuntimePrepareResult{Outcome: "rejected", ErrorCode: "invalid_request"})
	case ok && p.Step == wire.StepBegin:
		if code := t.beginRefusal(p); code != "" {
			send(d, id, wire.RuntimePrepareResult{Outcome: "rejected", ErrorCode: code})
			return nil
		}
		x := &state{id: id, begin: p}
		if p.SizeBytes != nil {
			x.size = *p.SizeBytes
		}
		if p.Action == wire.PrepareFile || p.Action == wire.PrepareSkill || p.Action == wire.PreparePlugin {
			x.staged = t.host.Area().NewStaged()
		}
		t.x = x
		send(d, id, wire.RuntimePrepareResult{Outcome: "ready"})
	}
	return nil
}

// beginRefusal is the rejection code of a begin this Runtime cannot take
// now, or "".
func (t *Transfer) beginRefusal(p wire.RuntimePrepare) string {
	env := p.EnvironmentID
	switch {
	case !t.bound(env):
		// decision: an Environment this Runtime is not configured with has
		// nothing to initialize here: the begin is refused invalid_request
		// before anything is staged, and no other workspace is chosen
		// (daemon-protocol.txt:19, :155).
		return "invalid_request"
	case t.host.Fenced(env):
		// decision: a quiescing or suspended Environment admits no new
		// mutation (daemon-protocol.txt:96); the transfer is refused as an
		// unavailable resource, which Core may retry after the resume.
		return "resource_unavailable"
	case t.host.Busy(env):
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
		if t.host.Area() == nil {
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
	if t.host.Area() == nil && p.Action != wire.PrepareInitialize && p.Action != wire.PrepareFinalize {
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

func (t *Transfer) bound(env string) bool {
	_, ok := t.host.Workspace(env)
	return ok
}

// DoStageChunk stages the chunk off the loop and answers received once its
// bytes are written; a chunk that does not continue the staged bytes, or
// runs past the declared size, ends the transfer as malformed.
func (h hooks) DoStageChunk(f *fsm.Firing[*peer.Event]) error {
	t, d, key := h.t, f.Arg.Driver(), f.Arg.Key
	p, _ := prepareStep(f)
	x := t.current(f)
	if x == nil || x.staged == nil {
		// decision: initialize and finalize carry no body
		// (daemon-protocol.txt:104: typed headers without file data), so a
		// chunk for one is malformed.
		return d.Local(key, fsm.EventID(transfer.EventMalformedFrame), nil)
	}
	end := p.Offset + int64(len(p.Data))
	x.inflight.end = end
	staged, size, data := x.staged, x.size, []byte(p.Data)
	t.host.Go(func() {
		// The receipt waits for the write only; the hash follows behind
		// it and gives the decoder's buffer back once it has read it.
		err := staged.Stage(p.Offset, data, size, wire.ReleaseChunk)
		if err != nil {
			wire.ReleaseChunk(data) // refused: nothing holds it
		}
		t.host.Post(func(d *peer.Driver) {
			var te *rtransfer.Error
			switch {
			case x.ended:
			case errors.As(err, &te):
				_ = d.Local(key, fsm.EventID(transfer.EventMalformedFrame), nil)
			case err != nil:
				t.host.Logger().Warn("staging a transfer chunk failed", "transfer_id", key.ID, "err", err)
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
func (h hooks) DoInstall(f *fsm.Firing[*peer.Event]) error {
	t, key := h.t, f.Arg.Key
	x := t.current(f)
	if x == nil {
		return nil
	}
	install := t.installer(x)
	t.host.Go(func() {
		err := install()
		if x.staged != nil {
			_ = x.staged.Discard()
		}
		t.host.Post(func(d *peer.Driver) {
			var te *rtransfer.Error
			switch {
			case err == nil:
				t.x = nil // completed: the slot is free again
				send(d, key.ID, wire.RuntimePrepareResult{Outcome: "completed", SizeBytes: x.size})
			case errors.As(err, &te):
				t.host.Logger().Info("transfer refused at commit", "transfer_id", key.ID, "err", te)
				send(d, key.ID, wire.RuntimePrepareResult{Outcome: te.Outcome, ErrorCode: te.Code})
			default:
				// The installer may have changed something: unknown keeps
				// the slot, and nothing is replayed (daemon-protocol.txt:159).
				t.host.Logger().Warn("transfer installation ended uncertain", "transfer_id", key.ID, "err", err)
				send(d, key.ID, wire.RuntimePrepareResult{Outcome: "unknown", ErrorCode: "runtime_preparation_unconfirmed"})
			}
		})
	})
	return nil
}

// installer is the commit's native work for x, built on the loop.
func (t *Transfer) installer(x *state) func() error {
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
		ws, ok := t.host.Workspace(p.EnvironmentID)
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
		area, kind, name := t.host.Area(), rtransfer.KindSkill, bundleName(p)
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
func (h hooks) DoDiscardStaged(f *fsm.Firing[*peer.Event]) error {
	t := h.t
	x := t.current(f)
	if x == nil {
		return nil
	}
	x.ended = true
	t.x = nil
	if st := x.staged; st != nil {
		t.host.Go(func() { _ = st.Discard() })
	}
	return nil
}

// Refuse answers a runtime_prepare the driver refused. A frame that
// addresses the pending transfer ends it as malformed (its one rejected
// result answers the transfer, never the frame itself); a begin over the
// slot is rejected runtime_preparation_capacity; anything else gets
// rejected with the code the table's reason names, or invalid_request.
func (t *Transfer) Refuse(d *peer.Driver, r *peer.Refusal) {
	key := peer.Key{Machine: transfer.Table.Name, ID: r.Msg.ID}
	if x := t.x; x != nil && x.id == r.Msg.ID && !x.ended {
		if i, ok := d.Lookup(key); ok && !i.Terminal() {
			_ = d.Local(key, fsm.EventID(transfer.EventMalformedFrame), nil)
			return
		}
	}
	if wire.CheckID(r.Msg.Entry, r.Msg.ID) != nil {
		return // no transfer ID to answer on; the driver logged the frame
	}
	code := peer.ReasonCode(r.Err, "invalid_request", prepareRejectedCodes)
	if p, ok := r.Msg.Payload.(wire.RuntimePrepare); ok && p.Step == wire.StepBegin && !t.bound(p.EnvironmentID) {
		// A begin naming an Environment this Runtime does not serve is
		// invalid_request whatever else refused it (the slot included), as
		// beginRefusal answers it when the slot is free.
		code = "invalid_request"
	}
	d.Send(peer.Outbound{ID: r.Msg.ID, Refusal: true, Payload: wire.RuntimePrepareResult{Outcome: "rejected", ErrorCode: code}}, nil)
}

// Close removes the staging of a transfer the connection still held when
// it closed.
func (t *Transfer) Close() {
	if x := t.x; x != nil && x.staged != nil {
		x.ended = true
		_ = x.staged.Discard()
	}
}

// send queues a frame from a hook or a posted func; failures are the
// machine's (failed-send events) and are logged by the driver.
func send(d *peer.Driver, id string, p wire.Payload) {
	d.Send(peer.Outbound{ID: id, Payload: p}, nil)
}
