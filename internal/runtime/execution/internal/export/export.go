// Package export is the workspace_export lifecycle on the Runtime's side
// of one connection (daemon-protocol.txt:185, wire-reference.md §2.11):
// the one export a connection runs, its machine's Runtime hooks and the
// refusals of exports nobody runs. A producer writes the archive of the
// Environment's outputs into a pipe, and each pull reads the next chunk of
// it off the loop. The export holds its Environment's workspace
// (execution and writes there are refused) until it closes. What the
// export needs of the connection (its read-only owner, what else holds
// the workspace, its goroutines and loop) comes through Host.
package export

import (
	"context"
	"errors"
	"io"

	"github.com/agentwire/agentwire/internal/runtime/execution/internal/conn"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/workspace_export"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/workspace"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// Host is what the export lifecycle needs of its connection.
type Host interface {
	conn.Loop
	// ReadOnlyOwner finds the ready read-only preparation of this
	// connection with handle: its Environment and the declaration it was
	// admitted with.
	ReadOnlyOwner(handle string) (env string, decl harness.Declaration, ok bool)
	// Workspace is the configured workspace of env.
	Workspace(env string) (*workspace.Workspace, bool)
	// HeldElsewhere reports whether anything but an export holds env's
	// workspace now (a write, a transfer, a suspension fence) or the
	// connection is shutting down.
	HeldElsewhere(env string) bool
	// Released tells the connection that the export no longer holds its
	// Environment (a suspension waiting for it to drain may settle).
	Released(d *peer.Driver)
}

// Export is the export of one connection (at most one runs at a time).
type Export struct {
	host Host
	run  *run
}

// New returns the export lifecycle of one connection.
func New(h Host) *Export { return &Export{host: h} }

// run is the export under way.
type run struct {
	id     string // the operation ID
	env    string // the Environment whose outputs it archives
	owner  string // the read-only preparation's handle
	offset int64  // the archive bytes answered so far
	pr     *io.PipeReader
	cancel context.CancelFunc
	closed bool
}

var errClosed = errors.New("execution: the export was closed")

// Holds reports whether the export under way archives env.
func (e *Export) Holds(env string) bool { return e.run != nil && e.run.env == env }

// Running reports whether an export is under way.
func (e *Export) Running() bool { return e.run != nil }

func request(f *fsm.Firing[*peer.Event]) (wire.WorkspaceExport, bool) {
	if m := f.Arg.Msg; m != nil {
		p, ok := m.Payload.(wire.WorkspaceExport)
		return p, ok
	}
	return wire.WorkspaceExport{}, false
}

// refusal is the code that refuses an export begin, or "".
//
// decision: an Environment this Runtime is not configured with is refused
// invalid_request before anything else (daemon-protocol.txt:19). The owner
// must be a ready read-only preparation of this connection whose
// declaration includes workspace_output_export, bound to the exact
// Environment (invalid_request otherwise, as for reads); one export runs
// per connection, and none while a write or a runtime_prepare transfer
// holds the same Environment's workspace or that Environment is fenced
// (resource_unavailable, wire-reference §2.11).
func (e *Export) refusal(p wire.WorkspaceExport) string {
	env := p.EnvironmentID
	ownerEnv, decl, owned := e.host.ReadOnlyOwner(p.Handle)
	switch {
	case !has(e.host, env):
		return "invalid_request"
	case !owned, e.run != nil, e.host.HeldElsewhere(env), !decl.Capabilities.WorkspaceOutputExport.Supports():
		return "resource_unavailable"
	case ownerEnv != env:
		return "invalid_request"
	}
	return ""
}

func has(h Host, env string) bool {
	_, ok := h.Workspace(env)
	return ok
}

// Hooks returns the workspace_export machine's Runtime hooks over e.
func (e *Export) Hooks() workspace_export.RuntimeHooks[*peer.Event] { return hooks{e} }

type hooks struct{ e *Export }

// DoOpenExport admits the export, starts the archive and serves its first
// chunk; a begin it refuses is answered rejected at offset 0.
func (h hooks) DoOpenExport(f *fsm.Firing[*peer.Event]) error {
	e, d, id := h.e, f.Arg.Driver(), f.Arg.Key.ID
	p, _ := request(f)
	if code := e.refusal(p); code != "" {
		d.Send(peer.Outbound{ID: id, Payload: result("rejected", 0, nil, code)}, nil)
		return nil
	}
	ctx, cancel := context.WithCancel(e.host.Context())
	pr, pw := io.Pipe()
	u := &run{id: id, env: p.EnvironmentID, owner: p.Handle, pr: pr, cancel: cancel}
	e.run = u
	ws, _ := e.host.Workspace(u.env) // refusal checked the binding
	e.host.Go(func() {
		_ = pw.CloseWithError(ws.ExportOutputs(ctx, pw))
	})
	e.servePull(d, u, 0)
	return nil
}

// DoServePull answers a next with the chunk at its offset.
func (h hooks) DoServePull(f *fsm.Firing[*peer.Event]) error {
	p, _ := request(f)
	if u := h.e.run; u != nil && u.id == f.Arg.Key.ID {
		h.e.servePull(f.Arg.Driver(), u, p.Offset)
	}
	return nil
}

// servePull reads the chunk at offset off the loop and answers it: a
// chunk of up to 64 KiB, completed at the archive's end, or failed
// (export_failed when the archive broke off, invalid_request when the
// pull named another offset than the bytes answered so far).
func (e *Export) servePull(d *peer.Driver, u *run, offset int64) {
	if offset != u.offset {
		d.Send(peer.Outbound{ID: u.id, Payload: result("failed", u.offset, nil, "invalid_request")}, nil)
		return
	}
	e.host.Go(func() {
		buf := make([]byte, wire.ChunkBytes)
		n, err := io.ReadFull(u.pr, buf)
		posted := e.host.Post(func(d *peer.Driver) {
			if u.closed {
				return // cancelled, expired or released meanwhile: no reply
			}
			var r wire.WorkspaceExportResult
			switch {
			case n > 0 && (err == nil || errors.Is(err, io.ErrUnexpectedEOF)):
				r = result("chunk", u.offset, buf[:n], "")
				u.offset += int64(n)
			case errors.Is(err, io.EOF):
				r = result("completed", u.offset, nil, "")
			default:
				e.host.Logger().Warn("workspace export broke off", "operation", u.id, "err", err)
				r = result("failed", u.offset, nil, "export_failed")
			}
			d.Send(peer.Outbound{ID: u.id, Payload: r}, nil)
		})
		if !posted {
			u.cancel()
		}
	})
}

func result(outcome string, offset int64, data []byte, code string) wire.WorkspaceExportResult {
	return wire.WorkspaceExportResult{Outcome: outcome, Offset: &offset, Data: data, ErrorCode: code}
}

// DoCloseExport stops the archive and frees the slot; a pull still being
// read is dropped without a reply.
func (h hooks) DoCloseExport(f *fsm.Firing[*peer.Event]) error {
	if u := h.e.run; u != nil && u.id == f.Arg.Key.ID {
		u.closed = true
		u.cancel()
		_ = u.pr.CloseWithError(errClosed)
		h.e.run = nil
		h.e.host.Released(f.Arg.Driver())
	}
	return nil
}

// CloseOf ends the export owned by the read-only preparation handle (it
// was released or expired): owner_closed, without a result.
func (e *Export) CloseOf(d *peer.Driver, handle string) {
	if u := e.run; u != nil && u.owner == handle {
		_ = d.Local(peer.Key{Machine: workspace_export.Name, ID: u.id}, fsm.EventID(workspace_export.EventOwnerClosed), nil)
	}
}

// Refuse answers a workspace_export the driver refused: a request that
// addresses no running export of this connection (nothing was begun under
// its ID, or it already ended) is rejected, resource_unavailable, or
// invalid_request when it did not decode; one refused by an export under
// way (a second pending pull, a repeated begin) gets no reply, since that
// export's own result answers. An ID over 128 bytes is never echoed.
func (e *Export) Refuse(d *peer.Driver, r *peer.Refusal) {
	id := r.Msg.ID
	if id == "" || len(id) > wire.MaxIDBytes {
		return
	}
	if inst, ok := d.Lookup(peer.Key{Machine: workspace_export.Name, ID: id}); ok && !inst.Terminal() {
		e.host.Logger().Warn("workspace_export refused without a reply", "operation", id, "err", r.Err)
		return
	}
	code := "resource_unavailable"
	if r.Msg.Payload == nil {
		code = "invalid_request"
	}
	d.Send(peer.Outbound{ID: id, Refusal: true, Payload: result("rejected", 0, nil, code)}, nil)
}
