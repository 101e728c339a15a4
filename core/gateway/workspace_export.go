package gateway

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/workspace_export"
	"github.com/agentwire/agentwire/peer"
	"github.com/agentwire/agentwire/wire"
)

// Workspace exports (daemon-protocol.txt:185, wire-reference.md §2.11):
// Core pulls the tar archive of the workspace's outputs through a ready
// read-only preparation, one chunk per pull, on the Session's scheduling
// reservation, like an idle read: the archive goes out only after the
// handle's confirmed close. The workspace_export machine decides every
// end; its hooks assemble the archive.

// MaxExportBytes bounds the archive Core assembles for one export.
//
// decision: the text bounds reads and writes, not exports (the wire lets
// an offset reach 528 MiB); Core keeps an export in memory until the close
// is confirmed, so it stops at 64 MiB: a larger archive is cancelled and
// answered unavailable (ExportTooLarge) without data.
const MaxExportBytes = 64 << 20

// Unavailable reasons of an export besides the read ones.
const (
	ExportTooLarge   = "export_too_large"
	ExportIncomplete = "export_incomplete" // the export ended without completed (failed, expired, aborted)
)

// exportRec is Core's record of one export; guarded by c.mu.
type exportRec struct {
	buf       []byte
	state     fsm.StateID
	sentState fsm.StateID
	last      wire.WorkspaceExportResult
	finished  bool // completed at exactly the assembled length
	end       string
	outcome   fsm.Outcome
	signal    chan struct{}
}

// ExportWorkspace pulls the Session's output archive (a tar) and returns
// it once the read-only handle's close is confirmed; every other end is a
// *ReadError without data. An export is never retried or resumed.
func (g *Gateway) ExportWorkspace(ctx context.Context, sessionID string) (ReadData, error) {
	ses, err := g.cfg.Store.GetSession(ctx, sessionID)
	if err != nil {
		return ReadData{}, err
	}
	env, err := g.cfg.Store.GetEnvironment(ctx, ses.EnvironmentID)
	if err != nil {
		return ReadData{}, err
	}
	envType, err := wire.ParseEnvironmentType(env.Type)
	if err != nil || !envType.Local() || len(env.Binding) == 0 {
		return ReadData{}, ErrNoWorkspace
	}
	var binding wire.LocalEnvironment
	if err := json.Unmarshal(env.Binding, &binding); err != nil || binding.ID == "" {
		return ReadData{}, ErrNoWorkspace
	}
	if _, _, idle := g.holdForIdleRead(ctx, sessionID); !idle {
		// decision: an export needs a read-only handle, which only an idle
		// Session's reservation gives (daemon-protocol.txt:177, 183); a
		// running Turn or another read makes it busy, as for a read.
		return ReadData{}, ErrSessionBusy
	}
	p := turnPlan{session: ses, env: env, admit: wire.AdmissionInput{Environment: envType, IdleFilesRead: true}}
	if p.required, err = wire.RequiredCapabilities(p.admit); err != nil {
		g.dropReadHold(sessionID)
		return ReadData{}, err
	}
	out := make(chan readEnd, 1)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		data, err := g.idleOwner(p, binding, func(c *conn, handle string) (ReadData, error) {
			return g.exportOnce(c, handle, binding.ID)
		})
		data.Target = "preparation"
		g.dropReadHold(sessionID)
		out <- readEnd{data, err}
	}()
	select {
	case end := <-out:
		return end.data, end.err
	case <-ctx.Done():
		return ReadData{}, ctx.Err()
	}
}

// exportOnce pulls one archive through handle on c.
func (g *Gateway) exportOnce(c *conn, handle, envID string) (ReadData, error) {
	id := credential.NewID("export")
	rec := &exportRec{signal: make(chan struct{}, 1)}
	c.mu.Lock()
	if c.eb == nil {
		c.eb = map[string]*exportRec{}
	}
	c.eb[id] = rec
	pc := c.pc
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.eb, id)
		c.mu.Unlock()
	}()
	f := wire.WorkspaceExport{Step: wire.ExportBegin, Handle: handle, EnvironmentID: envID}
	for {
		if err := g.sendExport(c, pc, rec, id, f); err != nil && !isWriteError(err) {
			return ReadData{}, unavailable(ReadUnknown, "the export's pull was not sent")
		}
		if !g.awaitExport(c, pc, rec) {
			return ReadData{}, unavailable(ReadUnknown, "the connection closed during the export")
		}
		c.mu.Lock()
		end, finished, size, last := rec.end, rec.finished, len(rec.buf), rec.last
		c.mu.Unlock()
		switch {
		case end != "" && finished:
			c.mu.Lock()
			data := rec.buf
			c.mu.Unlock()
			return ReadData{Data: data, DeviceID: c.deviceID}, nil
		case end == workspace_export.StateRejected.String():
			return ReadData{}, &ReadError{Code: last.ErrorCode, Rejected: true}
		case end != "":
			return ReadData{}, unavailable(ExportIncomplete, fmt.Sprintf("the export ended %s %s", end, last.ErrorCode))
		case size > MaxExportBytes:
			_ = g.sendExport(c, pc, rec, id, wire.WorkspaceExport{Step: wire.ExportCancel})
			return ReadData{}, unavailable(ExportTooLarge, "the archive is over the 64 MiB export bound")
		}
		f = wire.WorkspaceExport{Step: wire.ExportNext, Offset: int64(size)}
	}
}

func (g *Gateway) sendExport(c *conn, pc *peer.Conn, rec *exportRec, id string, f wire.WorkspaceExport) error {
	done := make(chan error, 1)
	err := pc.Do(g.ctx, func(d *peer.Driver) {
		d.Send(peer.Outbound{ID: id, Payload: f}, func(err error) {
			if i, ok := d.Lookup(peer.Key{Machine: workspace_export.Name, ID: id}); ok {
				c.mu.Lock()
				rec.state, rec.sentState = i.State(), i.State()
				c.mu.Unlock()
			}
			done <- err
		})
	})
	if err != nil {
		return err
	}
	select {
	case err = <-done:
		return err
	case <-pc.Done():
		return peer.ErrClosed
	}
}

// awaitExport waits until the instance moved after the last pull (false
// when the connection or the gateway closed first). The machine's budget
// bounds the wait.
func (g *Gateway) awaitExport(c *conn, pc *peer.Conn, rec *exportRec) bool {
	for {
		c.mu.Lock()
		moved := rec.end != "" || rec.state != rec.sentState
		c.mu.Unlock()
		if moved {
			return true
		}
		select {
		case <-rec.signal:
		case <-pc.Done():
			return false
		case <-g.ctx.Done():
			return false
		}
	}
}

// exportMoved is the Saver's part for export instances.
func (c *conn) exportMoved(i *peer.Instance) {
	c.mu.Lock()
	r := c.eb[i.Key.ID]
	if r != nil {
		r.state = i.State()
		if i.Terminal() {
			r.end, r.outcome = i.StateName(), i.Outcome()
		}
	}
	c.mu.Unlock()
	if r != nil {
		select {
		case r.signal <- struct{}{}:
		default:
		}
	}
}

// exportHooks are the workspace_export machine's Core hooks.
type exportHooks struct{ c *conn }

var _ workspace_export.CoreHooks[*peer.Event] = exportHooks{}

func (h exportHooks) rec(f *fsm.Firing[*peer.Event]) (*exportRec, wire.WorkspaceExportResult) {
	res, _ := readPayload[wire.WorkspaceExportResult](f)
	r := h.c.eb[f.Arg.Key.ID]
	if r != nil {
		r.last = res
	}
	return r, res
}

// DoAppendChunk appends a chunk that continues the archive exactly; one
// at another offset is not appended, and the next pull names the length
// Core holds, which the Runtime then refuses (invalid_request).
func (h exportHooks) DoAppendChunk(f *fsm.Firing[*peer.Event]) error {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	r, res := h.rec(f)
	if r == nil || res.Offset == nil || *res.Offset != int64(len(r.buf)) {
		return nil
	}
	r.buf = append(r.buf, res.Data...)
	return nil
}

// DoFinishArchive: the archive is whole only at exactly the reported length.
func (h exportHooks) DoFinishArchive(f *fsm.Firing[*peer.Event]) error {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	r, res := h.rec(f)
	if r != nil && res.Offset != nil && *res.Offset == int64(len(r.buf)) {
		r.finished = true
	}
	return nil
}

func (h exportHooks) DoDiscardArchive(f *fsm.Firing[*peer.Event]) error {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if r, _ := h.rec(f); r != nil {
		r.buf = nil
	}
	return nil
}
