package execution

import (
	"context"
	"errors"
	"io"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/workspace_export"
	"github.com/agentwire/agentwire/peer"
	"github.com/agentwire/agentwire/wire"
)

// exportRun is the one workspace export of this connection: a producer
// writes the archive into a pipe, and each pull reads the next chunk of it
// off the loop. It holds its Environment's workspace (execution and writes
// there are refused) until close_export.
type exportRun struct {
	id     string // the operation ID
	env    string // the Environment whose outputs/ it archives
	owner  string // the read-only preparation's handle
	offset int64  // the archive bytes answered so far
	pr     *io.PipeReader
	cancel context.CancelFunc
	closed bool
}

var errExportClosed = errors.New("execution: the export was closed")

type exportHooks struct{ s *Session }

func exportRequest(f *fsm.Firing[*peer.Event]) (wire.WorkspaceExport, bool) {
	if m := f.Arg.Msg; m != nil {
		p, ok := m.Payload.(wire.WorkspaceExport)
		return p, ok
	}
	return wire.WorkspaceExport{}, false
}

// exportRefusal is the code that refuses an export begin, or "".
//
// decision: an Environment this Runtime is not configured with is refused
// invalid_request before anything else (daemon-protocol.txt:19). The owner
// must be a ready read-only preparation of this connection whose
// declaration includes workspace_output_export, bound to the exact
// Environment (invalid_request otherwise, as for reads); one export runs
// per connection, and none while a write or a runtime_prepare transfer
// holds the same Environment's workspace or that Environment is fenced
// (resource_unavailable, wire-reference §2.11).
func (s *Session) exportRefusal(p wire.WorkspaceExport) string {
	env := p.EnvironmentID
	var owner *admission
	for _, a := range s.admissions {
		if a.handle == p.Handle && a.readOnly && !a.releasing && a.expiresAt != 0 {
			owner = a
		}
	}
	switch {
	case !s.cfg.Environments.Has(env):
		return "invalid_request"
	case owner == nil, s.export != nil, s.write != nil && s.write.env == env, s.xfer != nil && s.xfer.begin.EnvironmentID == env,
		s.fence.held(env), s.shutting, !owner.decl.Capabilities.WorkspaceOutputExport.Supports():
		return "resource_unavailable"
	case owner.env != env:
		return "invalid_request"
	}
	return ""
}

// DoOpenExport admits the export, starts the archive and serves its first
// chunk; a begin it refuses is answered rejected at offset 0.
func (h exportHooks) DoOpenExport(f *fsm.Firing[*peer.Event]) error {
	s, d, id := h.s, f.Arg.Driver(), f.Arg.Key.ID
	p, _ := exportRequest(f)
	if code := s.exportRefusal(p); code != "" {
		send(d, id, exportResult("rejected", 0, nil, code))
		return nil
	}
	ctx, cancel := context.WithCancel(s.ctx)
	pr, pw := io.Pipe()
	u := &exportRun{id: id, env: p.EnvironmentID, owner: p.Handle, pr: pr, cancel: cancel}
	s.export = u
	ws, _ := s.cfg.Environments.Lookup(u.env) // exportRefusal checked the binding
	s.goNative(func() {
		_ = pw.CloseWithError(ws.ExportOutputs(ctx, pw))
	})
	s.servePull(d, u, 0)
	return nil
}

// DoServePull answers a next with the chunk at its offset.
func (h exportHooks) DoServePull(f *fsm.Firing[*peer.Event]) error {
	p, _ := exportRequest(f)
	if u := h.s.export; u != nil && u.id == f.Arg.Key.ID {
		h.s.servePull(f.Arg.Driver(), u, p.Offset)
	}
	return nil
}

// servePull reads the chunk at offset off the loop and answers it: a
// chunk of up to 64 KiB, completed at the archive's end, or failed
// (export_failed when the archive broke off, invalid_request when the
// pull named another offset than the bytes answered so far).
func (s *Session) servePull(d *peer.Driver, u *exportRun, offset int64) {
	if offset != u.offset {
		send(d, u.id, exportResult("failed", u.offset, nil, "invalid_request"))
		return
	}
	s.goNative(func() {
		buf := make([]byte, wire.ChunkBytes)
		n, err := io.ReadFull(u.pr, buf)
		posted := s.post(func(d *peer.Driver) {
			if u.closed {
				return // cancelled, expired or released meanwhile: no reply
			}
			switch {
			case n > 0 && (err == nil || errors.Is(err, io.ErrUnexpectedEOF)):
				send(d, u.id, exportResult("chunk", u.offset, buf[:n], ""))
				u.offset += int64(n)
			case errors.Is(err, io.EOF):
				send(d, u.id, exportResult("completed", u.offset, nil, ""))
			default:
				s.cfg.Logger.Warn("workspace export broke off", "operation", u.id, "err", err)
				send(d, u.id, exportResult("failed", u.offset, nil, "export_failed"))
			}
		})
		if !posted {
			u.cancel()
		}
	})
}

func exportResult(outcome string, offset int64, data []byte, code string) wire.WorkspaceExportResult {
	return wire.WorkspaceExportResult{Outcome: outcome, Offset: &offset, Data: data, ErrorCode: code}
}

// DoCloseExport stops the archive and frees the slot; a pull still being
// read is dropped without a reply.
func (h exportHooks) DoCloseExport(f *fsm.Firing[*peer.Event]) error {
	if u := h.s.export; u != nil && u.id == f.Arg.Key.ID {
		u.closed = true
		u.cancel()
		_ = u.pr.CloseWithError(errExportClosed)
		h.s.export = nil
		h.s.checkDrain(f.Arg.Driver())
	}
	return nil
}

// closeExportOf ends the export owned by the read-only preparation handle
// (it was released or expired): owner_closed, without a result.
func (s *Session) closeExportOf(d *peer.Driver, handle string) {
	if u := s.export; u != nil && u.owner == handle {
		_ = d.Local(peer.Key{Machine: workspace_export.Table.Name, ID: u.id}, fsm.EventID(workspace_export.EventOwnerClosed), nil)
	}
}

// refuseExport answers a workspace_export the driver refused: a request
// that addresses no running export of this connection (nothing was begun
// under its ID, or it already ended) is rejected, resource_unavailable, or
// invalid_request when it did not decode; one refused by an export under
// way (a second pending pull, a repeated begin) gets no reply, since that
// export's own result answers. An ID over 128 bytes is never echoed.
func (s *Session) refuseExport(d *peer.Driver, r *peer.Refusal) {
	id := r.Msg.ID
	if id == "" || len(id) > wire.MaxIDBytes {
		return
	}
	if inst, ok := d.Lookup(peer.Key{Machine: workspace_export.Table.Name, ID: id}); ok && !inst.Terminal() {
		s.cfg.Logger.Warn("workspace_export refused without a reply", "operation", id, "err", r.Err)
		return
	}
	code := "resource_unavailable"
	if r.Msg.Payload == nil {
		code = "invalid_request"
	}
	d.Send(peer.Outbound{ID: id, Refusal: true, Payload: exportResult("rejected", 0, nil, code)}, nil)
}
