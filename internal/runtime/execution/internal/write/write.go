// Package write is the workspace_write lifecycle on the Runtime's side of
// one connection (daemon-protocol.txt:185): the one upload a connection
// receives, its SHA-256 computed beside the receive loop, the machine's
// Runtime hooks, the installer's run and the refusals. What the write
// needs of the connection (the workspace, what else holds it, its
// goroutines and loop) comes through Host.
package write

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"

	"github.com/agentwire/agentwire/internal/runtime/execution/internal/conn"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/workspace_write"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/workspace"
	"github.com/agentwire/agentwire/wire"
)

// Host is what the write lifecycle needs of its connection.
type Host interface {
	conn.Loop
	// Workspace is the configured workspace of env.
	Workspace(env string) (*workspace.Workspace, bool)
	// HeldElsewhere reports whether anything but a write holds env's
	// workspace now (execution, an export, a transfer, a suspension
	// fence) or the connection is shutting down.
	HeldElsewhere(env string) bool
	// Released tells the connection that the write no longer holds its
	// Environment (a suspension waiting for it to drain may settle).
	Released(d *peer.Driver)
}

// Write is the write lifecycle of one connection; touched on the
// connection's loop only.
type Write struct {
	host Host
	up   *upload // the workspace write under way, if any (one per connection)
}

// New returns the write lifecycle of one connection.
func New(h Host) *Write { return &Write{host: h} }

// Holds reports whether the write under way holds env's workspace.
func (w *Write) Holds(env string) bool { return w.up != nil && w.up.env == env }

// upload is the one workspace write of this connection: the body staged in
// memory while it is received, then handed to the installer. It holds the
// workspace of its Environment from open_upload until it is discarded and
// the installer (if it ran) returned; execution in that Environment is
// refused meanwhile (daemon-protocol.txt:185).
//
// decision: "the Runtime excludes execution while it receives or applies
// a write" (daemon-protocol.txt:185) is read per workspace: the write
// touches only the workspace of the Environment it names, so execution of
// another Environment, or of Environment none, is neither refused nor
// delayed by it. One write per connection stays a transfer limit of the
// connection (write_capacity), which refuses only the second write.
//
// decision: the body is staged in memory, at most 50 MiB on one
// connection, because the protocol allows no staging directory
// (daemon-protocol.txt:185) and nothing may reach the workspace before the
// digest was checked; the digest is computed as the chunks arrive, so
// commit costs no second pass. The chunks are kept as decoded (each frame's
// data is a pooled buffer nobody else holds), not copied into one buffer,
// and given back to the decoder's pool once the installer returned.
type upload struct {
	id        string
	env       string // the Environment whose workspace it writes
	path      string
	size      int64
	digest    string
	body      [][]byte
	received  int64
	sum       *hasher
	applying  bool // the installer runs
	discarded bool // the machine dropped the upload
}

// hasher computes an upload's SHA-256 on a goroutine of its own, fed the
// chunks as they are staged.
//
// decision: hashing a 64 KiB chunk costs about as much as its whole round
// trip on loopback, so it runs beside the receive loop, overlapping the
// next frame's round trip, rather than before each receipt. The
// digest_matches guard waits for it to catch up at commit: a bounded wait
// for the chunks staged since its last pass, usually none, since Core's
// commit comes a round trip after the last receipt
// (daemon-protocol.txt:185 only asks that the digest is verified before
// the installer runs).
type hasher struct {
	mu     sync.Mutex
	queue  [][]byte
	closed bool
	wake   chan struct{}
	done   chan struct{}
	once   sync.Once
	digest string // set before done closes
}

func (w *Write) newHasher() *hasher {
	h := &hasher{wake: make(chan struct{}, 1), done: make(chan struct{})}
	ctx := w.host.Context()
	w.host.Go(func() {
		defer close(h.done)
		sum := sha256.New()
		for {
			h.mu.Lock()
			q, closed := h.queue, h.closed
			h.queue = nil
			h.mu.Unlock()
			for _, d := range q {
				sum.Write(d)
			}
			switch {
			case len(q) > 0:
				continue
			case closed:
				h.digest = hex.EncodeToString(sum.Sum(nil))
				return
			}
			select {
			case <-h.wake:
			case <-ctx.Done():
				return
			}
		}
	})
	return h
}

func (h *hasher) push(d []byte) {
	h.mu.Lock()
	h.queue = append(h.queue, d)
	h.mu.Unlock()
	h.signal()
}

func (h *hasher) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// close ends the input; the goroutine finishes what it has and stops.
func (h *hasher) close() {
	h.once.Do(func() {
		h.mu.Lock()
		h.closed = true
		h.mu.Unlock()
		h.signal()
	})
}

// sum closes the input and waits for the digest ("" when the connection
// closed first).
func (h *hasher) sum() string {
	h.close()
	<-h.done
	return h.digest
}

// Hooks returns the workspace_write machine's Runtime hooks over w.
func (w *Write) Hooks() workspace_write.RuntimeHooks[*peer.Event] { return hooks{w} }

type hooks struct{ w *Write }

func writeStep(f *fsm.Firing[*peer.Event]) (wire.WorkspaceWrite, bool) {
	if m := f.Arg.Msg; m != nil {
		p, ok := m.Payload.(wire.WorkspaceWrite)
		return p, ok
	}
	return wire.WorkspaceWrite{}, false
}

// writeRefusal is the code that refuses the write begin p now, or "".
//
// decision: a begin naming an Environment this Runtime is not configured
// with is refused invalid_request before anything is opened: the write has
// no workspace here, and the Runtime never picks another one
// (daemon-protocol.txt:19, :155).
//
// decision: a write is refused resource_unavailable while execution holds
// its Environment's workspace (a Run, an execution preparation or its
// Executor) or an export reads it, and write_capacity while another write
// runs: one write per connection, as the reference. Reads and read-only
// preparations do not conflict: the installer replaces a file in one
// rename, so a reader sees the old file or the new one
// (daemon-protocol.txt:185 excludes execution only). Execution in another
// Environment does not conflict either: it cannot reach this workspace.
//
// decision: begin's session_id is not matched against a binding: the
// daemon's bindings are per Environment (--environment ID=DIR), and Core
// owns which Session uses which Environment (daemon-protocol.txt:7).
func (w *Write) refusal(p wire.WorkspaceWrite) string {
	env := p.EnvironmentID
	switch {
	case !w.bound(env):
		return "invalid_request"
	case w.up != nil:
		return "write_capacity"
	case w.host.HeldElsewhere(env):
		// decision: a runtime_prepare transfer into the same Environment,
		// its quiesce and a shutdown refuse a write as they refuse
		// execution (wire-reference §2.10, daemon-protocol.txt:96).
		return "resource_unavailable"
	}
	return ""
}

func (w *Write) bound(env string) bool {
	_, ok := w.host.Workspace(env)
	return ok
}

func (h hooks) GuardOwnerFree(f *fsm.Firing[*peer.Event]) bool {
	p, ok := writeStep(f)
	return ok && h.w.refusal(p) == ""
}

// GuardChunkInBounds: 1 to 64 KiB at exactly the bytes received so far,
// within the declared size. A frame that failed to decode arrives without
// a message (Write.Refuse) and is never in bounds.
func (h hooks) GuardChunkInBounds(f *fsm.Firing[*peer.Event]) bool {
	p, ok := writeStep(f)
	u := h.w.up
	if !ok || u == nil || u.id != f.Arg.Key.ID {
		return false
	}
	n := int64(len(p.Data))
	return n >= 1 && n <= wire.ChunkBytes && p.Offset == u.received && u.received+n <= u.size
}

// GuardOffsetMatches holds for the receipts this Runtime sends: they name
// the bytes staged so far.
func (h hooks) GuardOffsetMatches(f *fsm.Firing[*peer.Event]) bool {
	r, ok := f.Arg.Msg.Payload.(wire.WorkspaceWriteResult)
	u := h.w.up
	return ok && u != nil && r.Offset == u.received
}

// GuardDigestMatches: the whole declared body arrived and its SHA-256 is
// the declared one; otherwise the installer never runs.
func (h hooks) GuardDigestMatches(f *fsm.Firing[*peer.Event]) bool {
	u := h.w.up
	if u == nil || u.id != f.Arg.Key.ID || u.received != u.size {
		return false
	}
	return u.sum.sum() == u.digest
}

// SendWorkspaceWriteResult answers the step that asked for a receipt:
// ready for begin, received for a chunk in bounds; a chunk out of bounds, a
// commit whose size or digest does not match and an expired upload are
// rejected invalid_request. The installer's own receipt is sent by
// DoApplyWrite when it returns.
func (h hooks) SendWorkspaceWriteResult(f *fsm.Firing[*peer.Event]) error {
	d, id := f.Arg.Driver(), f.Arg.Key.ID
	var r wire.WorkspaceWriteResult
	switch workspace_write.Event(f.Event) {
	case workspace_write.EventBegin:
		r.Outcome = "ready"
	case workspace_write.EventChunk:
		if f.Table.State(f.To).Outcome == fsm.OutcomeNone && h.w.up != nil {
			r.Outcome, r.Offset = "received", h.w.up.received
			break
		}
		r.Outcome, r.ErrorCode = "rejected", "invalid_request"
	default: // a commit that failed its digest check, or the receive deadline
		r.Outcome, r.ErrorCode = "rejected", "invalid_request"
	}
	send(d, id, r)
	return nil
}

// DoOpenUpload takes the workspace for the declared body.
func (h hooks) DoOpenUpload(f *fsm.Firing[*peer.Event]) error {
	p, _ := writeStep(f)
	size := int64(0)
	if p.SizeBytes != nil {
		size = *p.SizeBytes
	}
	h.w.up = &upload{id: f.Arg.Key.ID, env: p.EnvironmentID, path: p.Path, size: size, digest: p.SHA256,
		body: make([][]byte, 0, (size+wire.ChunkBytes-1)/wire.ChunkBytes), sum: h.w.newHasher()}
	return nil
}

// DoStageChunk keeps the frame's bytes: the decoded data slice, which the
// decoder took from its pool for this frame alone (the message around it
// is not kept); DoApplyWrite gives it back.
func (h hooks) DoStageChunk(f *fsm.Firing[*peer.Event]) error {
	p, _ := writeStep(f)
	u := h.w.up
	if u == nil {
		return errors.New("execution: a chunk staged without an upload")
	}
	u.body = append(u.body, p.Data)
	u.received += int64(len(p.Data))
	u.sum.push(p.Data)
	return nil
}

// DoApplyWrite runs the installer off the loop with the verified body and
// sends its receipt once it returned. The upload keeps the workspace until
// then, even if the connection is lost meanwhile.
func (h hooks) DoApplyWrite(f *fsm.Firing[*peer.Event]) error {
	w, u := h.w, h.w.up
	if u == nil {
		return errors.New("execution: apply without an upload")
	}
	ws, ok := w.host.Workspace(u.env)
	if !ok {
		// owner_free admits only a bound Environment, so this cannot
		// happen; should it, nothing is applied and the write is refused.
		send(f.Arg.Driver(), u.id, wire.WorkspaceWriteResult{Outcome: "rejected", ErrorCode: "invalid_request"})
		return nil
	}
	u.applying = true
	body := u.body
	w.host.Go(func() {
		r := installResult(ws.WriteFile(u.path, body...), u.size)
		// The hasher finished before the digest guard let the installer
		// run, and the installer has returned: nothing reads the chunks
		// any more, so their buffers go back to the decoder's pool.
		// decision: a discarded upload's chunks are left to the collector
		// instead, since its hasher may still be reading them.
		for _, d := range body {
			wire.ReleaseChunk(d)
		}
		posted := w.host.Post(func(d *peer.Driver) {
			u.applying = false
			send(d, u.id, r)
			w.release(d, u)
		})
		if !posted {
			w.host.Logger().Warn("workspace write settled after the connection closed; its receipt is lost", "mutation_id", u.id, "outcome", r.Outcome)
		}
	})
	return nil
}

// installResult is the receipt of an installer's return.
func installResult(err error, size int64) wire.WorkspaceWriteResult {
	var we *workspace.Error
	switch {
	case err == nil:
		return wire.WorkspaceWriteResult{Outcome: "completed", SizeBytes: size}
	case errors.As(err, &we) && we.Outcome == "rejected":
		return wire.WorkspaceWriteResult{Outcome: "rejected", ErrorCode: we.Code, Reason: we.Reason}
	}
	// decision: any other failure may have changed the file (the rename's
	// outcome is not known), so it is unknown, never rejected
	// (daemon-protocol.txt:185).
	return wire.WorkspaceWriteResult{Outcome: "unknown", ErrorCode: "write_unconfirmed"}
}

// DoDiscardUpload drops the staged body; the workspace is free once the
// installer, if it runs, has returned.
func (h hooks) DoDiscardUpload(f *fsm.Firing[*peer.Event]) error {
	if u := h.w.up; u != nil && u.id == f.Arg.Key.ID {
		u.discarded = true
		if !u.applying {
			u.body = nil
		}
		h.w.release(f.Arg.Driver(), u)
	}
	return nil
}

// release frees the workspace when u is discarded and not applying; a
// quiesce waiting for active work to settle learns it.
func (w *Write) release(d *peer.Driver, u *upload) {
	if u.discarded {
		u.sum.close()
	}
	if w.up == u && u.discarded && !u.applying {
		u.body = nil
		w.up = nil
		w.host.Released(d)
	}
}

// Refuse answers a workspace_write the driver refused.
//
// decision: a frame of a write that is under way and failed to decode or
// validate (a chunk over 64 KiB, say) ends that write as a chunk out of
// bounds would: rejected invalid_request, the upload discarded
// (spec/workspace_write.yaml, staging × chunk). Any other refusal of a
// frame that addresses a write of this connection gets no reply of its
// own, since that write's one receipt answers it. A begin refused before
// anything started gets the code of refusal, and a chunk or commit
// for no write here resource_unavailable. A frame whose ID is not a
// canonical mutation UUID cannot be correlated and gets nothing.
func (w *Write) Refuse(d *peer.Driver, r *peer.Refusal) {
	id := r.Msg.ID
	if !wire.IsCanonicalUUID(id) {
		return
	}
	key := peer.Key{Machine: workspace_write.Table.Name, ID: id}
	if _, live := d.Lookup(key); live {
		if r.Kind == peer.RefusedDecode {
			_ = d.Local(key, fsm.EventID(workspace_write.EventChunk), nil)
			return
		}
		w.host.Logger().Warn("workspace_write refused without a second receipt", "mutation_id", id, "err", r.Err)
		return
	}
	code := "resource_unavailable"
	switch p, ok := r.Msg.Payload.(wire.WorkspaceWrite); {
	case !ok:
		code = "invalid_request"
	case p.Step == wire.StepBegin:
		if code = w.refusal(p); code == "" {
			code = "write_capacity"
		}
	}
	d.Send(peer.Outbound{ID: id, Refusal: true, Payload: wire.WorkspaceWriteResult{Outcome: "rejected", ErrorCode: code}}, nil)
}

// send queues a frame from a hook or a posted func; failures are the
// machine's (failed-send events) and are logged by the driver.
func send(d *peer.Driver, id string, p wire.Payload) {
	d.Send(peer.Outbound{ID: id, Payload: p}, nil)
}
