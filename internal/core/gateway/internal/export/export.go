// Package export is the workspace_export lifecycle on Core's side of one
// connection (daemon-protocol.txt:185, wire-reference.md §2.11): its
// records, the machine's Core hooks, and Pull, which drives one export
// through a ready read-only handle, a chunk per pull. The machine decides
// every end; the hooks assemble the archive.
package export

import (
	"context"
	"fmt"
	"sync"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/workspace_export"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/link"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

// MaxBytes bounds the archive Core assembles for one export.
//
// decision: the text bounds reads and writes, not exports (the wire lets
// an offset reach 528 MiB); Core keeps an export in memory until the close
// is confirmed, so it stops at 64 MiB: a larger archive is cancelled and
// answered unavailable (TooLarge) without data.
const MaxBytes = 64 << 20

// Reasons an export ends without an archive and without a rejection.
const (
	TooLarge   = "export_too_large"
	Incomplete = "export_incomplete" // the export ended without completed (failed, expired, aborted)
	Unknown    = "read_unknown"      // the pull was not sent, or the connection closed during the export
)

// Ended is an export that returned no archive: the Runtime's rejection
// (Rejected, its code), or one of the reasons above.
type Ended struct {
	Rejected bool
	Code     string
	Detail   string
}

func (e *Ended) Error() string { return fmt.Sprintf("export: %s: %s", e.Code, e.Detail) }

// Book is one connection's exports in flight, by operation ID. Its hooks
// run on the connection's loop, Pull on the caller's goroutine.
type Book struct {
	mu   sync.Mutex
	recs map[string]*rec
}

// rec is one export; the Book's mu guards everything but the tracker.
type rec struct {
	t        *link.Tracker
	buf      []byte
	last     wire.WorkspaceExportResult
	finished bool // completed at exactly the assembled length
}

// Pull exports the workspace of envID through handle on pc and returns
// the archive once the export completed at exactly its length; any other
// end is an *Ended. An export is never retried or resumed. ctx bounds the
// waits (the gateway's lifetime); the machine's budget bounds each pull.
func (b *Book) Pull(ctx context.Context, pc *peer.Conn, handle, envID string) ([]byte, error) {
	id := credential.NewID("export")
	r := &rec{t: link.NewTracker(workspace_export.Name, id)}
	b.mu.Lock()
	if b.recs == nil {
		b.recs = map[string]*rec{}
	}
	b.recs[id] = r
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.recs, id)
		b.mu.Unlock()
	}()
	f := wire.WorkspaceExport{Step: wire.ExportBegin, Handle: handle, EnvironmentID: envID}
	for {
		if err := r.t.Send(ctx, pc, f); err != nil && !link.IsWriteError(err) {
			return nil, &Ended{Code: Unknown, Detail: "the export's pull was not sent"}
		}
		if !r.t.Await(ctx, pc) {
			return nil, &Ended{Code: Unknown, Detail: "the connection closed during the export"}
		}
		end, _ := r.t.End()
		b.mu.Lock()
		finished, size, last, data := r.finished, len(r.buf), r.last, r.buf
		b.mu.Unlock()
		switch {
		case end != "" && finished:
			return data, nil
		case end == workspace_export.StateRejected.String():
			return nil, &Ended{Rejected: true, Code: last.ErrorCode}
		case end != "":
			return nil, &Ended{Code: Incomplete, Detail: fmt.Sprintf("the export ended %s %s", end, last.ErrorCode)}
		case size > MaxBytes:
			_ = r.t.Send(ctx, pc, wire.WorkspaceExport{Step: wire.ExportCancel})
			return nil, &Ended{Code: TooLarge, Detail: "the archive is over the 64 MiB export bound"}
		}
		f = wire.WorkspaceExport{Step: wire.ExportNext, Offset: int64(size)}
	}
}

// Moved is the connection's Saver for export instances.
func (b *Book) Moved(i *peer.Instance) {
	b.mu.Lock()
	r := b.recs[i.Key.ID]
	b.mu.Unlock()
	if r != nil {
		r.t.Moved(i)
	}
}

// Hooks returns the workspace_export machine's Core hooks over b.
func (b *Book) Hooks() workspace_export.CoreHooks[*peer.Event] { return hooks{b} }

type hooks struct{ b *Book }

// rec returns the export f fired for, with the result it carries noted as
// its last; the caller holds b.mu.
func (h hooks) rec(f *fsm.Firing[*peer.Event]) (*rec, wire.WorkspaceExportResult) {
	res, _ := link.Payload[wire.WorkspaceExportResult](f)
	r := h.b.recs[f.Arg.Key.ID]
	if r != nil {
		r.last = res
	}
	return r, res
}

// DoAppendChunk appends a chunk that continues the archive exactly; one
// at another offset is not appended, and the next pull names the length
// Core holds, which the Runtime then refuses (invalid_request).
func (h hooks) DoAppendChunk(f *fsm.Firing[*peer.Event]) error {
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	r, res := h.rec(f)
	if r == nil || res.Offset == nil || *res.Offset != int64(len(r.buf)) {
		return nil
	}
	r.buf = append(r.buf, res.Data...)
	return nil
}

// DoFinishArchive: the archive is whole only at exactly the reported length.
func (h hooks) DoFinishArchive(f *fsm.Firing[*peer.Event]) error {
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	r, res := h.rec(f)
	if r != nil && res.Offset != nil && *res.Offset == int64(len(r.buf)) {
		r.finished = true
	}
	return nil
}

func (h hooks) DoDiscardArchive(f *fsm.Firing[*peer.Event]) error {
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	if r, _ := h.rec(f); r != nil {
		r.buf = nil
	}
	return nil
}
