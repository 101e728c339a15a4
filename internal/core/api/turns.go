package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/wire"
)

// TurnRequest submits a Turn with its ordered input.
type TurnRequest struct {
	Input wire.MessageInput `json:"input"`
}

// Turn is the API's view of a Turn: its public status projection and,
// while it is queued, why Core has not placed it yet.
type Turn struct {
	ID        string       `json:"id"`
	SessionID string       `json:"session_id"`
	Status    store.Status `json:"status"`
	Waiting   *Waiting     `json:"waiting,omitempty"`
	// Usage is the Turn's last usage snapshot (GET of one Turn only).
	Usage     json.RawMessage `json:"usage,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// Waiting is why a queued Turn is not placed (Core's scheduler): a reason
// code (no_device, kind_not_declared, kind_unavailable,
// capability_missing, environment_suspended, device_busy, session_busy),
// words for a person, and since when.
type Waiting struct {
	Reason string    `json:"reason"`
	Detail string    `json:"detail"`
	Since  time.Time `json:"since"`
}

func (a *API) turnView(t store.Turn) Turn {
	v := Turn{ID: t.ID, SessionID: t.SessionID, Status: t.Status(), CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	if t.State == store.TurnQueued && a.cfg.Waiting != nil {
		if w, ok := a.cfg.Waiting(t.ID); ok {
			v.Waiting = &w
		}
	}
	return v
}

func (a *API) createTurn(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r, r.PathValue("session_id"))
	if !ok {
		return
	}
	var req TurnRequest
	if !decode(w, r, &req) {
		return
	}
	if env, err := a.cfg.Store.GetEnvironment(r.Context(), s.EnvironmentID); err != nil {
		a.internal(w, "get environment", err)
		return
	} else if t, err := wire.ParseEnvironmentType(env.Type); err == nil && t.Local() && env.DeviceID == "" {
		// A Session created before Environments were registered names a
		// binding no device hosts: no Turn of it can ever be placed.
		writeJSON(w, http.StatusConflict, Error{Error: "environment_unplaced", Detail: "the Session's Environment is hosted by no device; create a Session on a registered Environment (POST /api/v1/environments)"})
		return
	}
	if field, detail, ok := validInput(req.Input, "input"); !ok {
		badField(w, field, detail)
		return
	}
	raw, err := json.Marshal(req.Input)
	if err != nil {
		a.internal(w, "encode input", err)
		return
	}
	now := a.now()
	t := store.Turn{ID: credential.NewID("turn"), SessionID: s.ID, Input: raw, CreatedAt: now}
	release, ok := a.admit(r.Context(), w, s.Project, demand{queuedTurns: 1, bytes: int64(len(raw))})
	if !ok {
		return
	}
	if err := a.cfg.Store.CreateTurn(r.Context(), t); err != nil {
		release()
		a.internal(w, "create turn", err)
		return
	}
	t.State, t.UpdatedAt = store.TurnQueued, now
	if a.cfg.Submitted != nil {
		a.cfg.Submitted(t.ID)
	}
	// A new Turn: the scheduler has not considered it yet.
	writeJSON(w, http.StatusCreated, Turn{ID: t.ID, SessionID: t.SessionID, Status: t.Status(), CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt})
}

// turn loads a Turn the caller may see.
func (a *API) turn(w http.ResponseWriter, r *http.Request) (store.Turn, bool) {
	// Through the Journal: a Turn whose failure Core could not write yet
	// is shown failed (unrecorded.go).
	t, err := a.cfg.Journal.Turn(r.Context(), r.PathValue("turn_id"))
	if errors.Is(err, store.ErrNotFound) {
		notFound(w, "turn")
		return t, false
	}
	if err != nil {
		a.internal(w, "get turn", err)
		return t, false
	}
	s, err := a.cfg.Store.GetSession(r.Context(), t.SessionID)
	if err != nil || !visible(r, s.Project) {
		notFound(w, "turn")
		return t, false
	}
	return t, true
}

func (a *API) getTurn(w http.ResponseWriter, r *http.Request) {
	if t, ok := a.turn(w, r); ok {
		v := a.turnView(t)
		v.Usage = a.usage(r.Context(), t.ID)
		writeJSON(w, http.StatusOK, v)
	}
}

// usage is the Turn's last usage snapshot: the final one done carried, or
// else the last usage frame; nil when the Runtime reported none.
//
// decision: each usage frame and done's usage is the cumulative
// measurement so far and replaces the one before; an absent measurement
// is unknown, not zero (daemon-protocol.txt:100), so a done without usage
// leaves the last frame's snapshot standing and a Turn with neither shows
// none.
func (a *API) usage(ctx context.Context, turnID string) json.RawMessage {
	if done, err := a.cfg.Store.LastEvent(ctx, turnID, wire.TypeDone); err == nil {
		var d struct {
			Usage json.RawMessage `json:"usage"`
		}
		if json.Unmarshal(done.Payload, &d) == nil && len(d.Usage) > 0 && string(d.Usage) != "null" && string(d.Usage) != "{}" {
			return d.Usage
		}
	}
	if u, err := a.cfg.Store.LastEvent(ctx, turnID, wire.TypeUsage); err == nil {
		return u.Payload
	}
	return nil
}

// maxListedTurns bounds one listing of a Session's Turns.
const maxListedTurns = 100

// listTurns answers GET /api/v1/sessions/{id}/turns: the Session's newest
// Turns (?limit=N, 1 to 100, default 20), oldest first.
func (a *API) listTurns(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r, r.PathValue("session_id"))
	if !ok {
		return
	}
	limit := 20
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListedTurns {
			badField(w, "limit", "want a whole number from 1 to 100")
			return
		}
		limit = n
	}
	ts, err := a.cfg.Store.SessionTurns(r.Context(), s.ID, limit)
	if err != nil {
		a.internal(w, "list turns", err)
		return
	}
	views := make([]any, 0, len(ts))
	for _, t := range ts {
		views = append(views, a.turnView(t))
	}
	writeJSON(w, http.StatusOK, map[string]any{"session_id": s.ID, "turns": views})
}

// InputRequest adds one active input to a running Turn.
type InputRequest struct {
	InputID string            `json:"input_id,omitempty"`
	Input   wire.MessageInput `json:"input"`
}

// maxInputIDBytes is the wire bound of a steering input ID (wire-reference.md §2.8).
const maxInputIDBytes = 256

func (a *API) addInput(w http.ResponseWriter, r *http.Request) {
	t, ok := a.turn(w, r)
	if !ok {
		return
	}
	var req InputRequest
	if !decode(w, r, &req) {
		return
	}
	if len(req.InputID) > maxInputIDBytes {
		badField(w, "input_id", "longer than 256 bytes")
		return
	}
	if field, detail, ok := validInput(req.Input, "input"); !ok {
		badField(w, field, detail)
		return
	}
	if t.State.Terminal() {
		writeJSON(w, http.StatusConflict, Error{Error: "turn_finished", Detail: "the Turn has finished"})
		return
	}
	if a.cfg.CheckInput != nil {
		if err := a.cfg.CheckInput(r.Context(), t.ID, req.Input); err != nil {
			writeJSON(w, http.StatusConflict, Error{Error: "input_unsupported", Field: "input", Detail: err.Error()})
			return
		}
	}
	if req.InputID == "" {
		req.InputID = credential.NewID("in")
	}
	raw, _ := json.Marshal(req.Input)
	s, err := a.cfg.Store.GetSession(r.Context(), t.SessionID)
	if err != nil {
		a.internal(w, "get session", err)
		return
	}
	release, ok := a.admit(r.Context(), w, s.Project, demand{bytes: int64(len(raw))})
	if !ok {
		return
	}
	// Active input is stored first and delivered later, one at a time
	// (daemon-protocol.txt:124).
	in, err := a.cfg.Store.AppendInput(r.Context(), store.Input{TurnID: t.ID, ID: req.InputID, Content: raw, CreatedAt: a.now()})
	if err != nil {
		release()
	}
	if errors.Is(err, store.ErrConflict) {
		writeJSON(w, http.StatusConflict, Error{Error: "input_conflict", Field: "input_id", Detail: "an input with this ID exists"})
		return
	}
	if err != nil {
		a.internal(w, "append input", err)
		return
	}
	if a.cfg.InputAdded != nil {
		a.cfg.InputAdded(t.ID)
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"input_id": in.ID, "seq": in.Seq})
}

// events streams the Turn's journal as Server-Sent Events through a
// durable subscription: each event's id is its journal sequence number,
// so a client resumes with Last-Event-ID. The stream's last event says why
// it ends: "status" once the Turn is terminal and every event was sent;
// while it runs, one "live" event {"after":N} (no id) says the history up
// to event N was sent and what follows is new;
// "end" {"reason":"subscriber_overflow","resume_after":N} when the client
// took no event for the stall bound (it resumes after N);
// "error" {"error":"credential_revoked"} when the key was revoked;
// "end" {"reason":"shutdown","resume_after":N} when Core is stopping.
func (a *API) events(w http.ResponseWriter, r *http.Request) {
	t, ok := a.turn(w, r)
	if !ok {
		return
	}
	var after int64
	if v := strings.TrimSpace(r.Header.Get("Last-Event-ID")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			badField(w, "Last-Event-ID", "must be an event id of this stream")
			return
		}
		after = n
	}
	rc := http.NewResponseController(w)
	stall := a.stall()
	// Every write is bounded: a client that stops reading ends its
	// stream instead of holding it (and what it buffered) for ever.
	write := func(format string, args ...any) error {
		_ = rc.SetWriteDeadline(time.Now().Add(stall))
		_, err := fmt.Fprintf(w, format, args...)
		return err
	}
	// An event's payload is written as it is stored (the journal keeps
	// compact JSON), not through a formatted copy: a stream of a 2 MiB
	// done costs the event's bytes once, held against the budget.
	writeEvent := func(e store.Event) error {
		if err := write("id: %d\nevent: %s\ndata: ", e.Seq, e.Type); err != nil {
			return err
		}
		data := []byte(e.Payload)
		if bytes.IndexByte(data, '\n') >= 0 {
			data = compact(data) // a line break would end the SSE event early
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
		_, err := io.WriteString(w, "\n\n")
		return err
	}
	flush := func() { _ = rc.Flush() }
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flush()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	key := caller(r).Project
	if key == "" {
		key = "admin"
	}
	sub := a.cfg.Journal.SubscribeDurable(ctx, key, t.ID, after, a.clock(), stall)
	defer func() {
		cancel()
		for e := range sub.Events() {
			sub.Written(e) // drain, so the subscription's goroutine ends with the request
		}
		sub.Release()
	}()
	recheck := a.clock().NewTimer(a.revalidate())
	defer recheck.Stop()
	last := after
	for {
		select {
		case <-a.stopping:
			_ = write("event: end\ndata: {\"reason\":\"shutdown\",\"resume_after\":%d}\n\n", last)
			flush()
			return
		case e, open := <-sub.Events():
			if !open {
				a.endStream(sub, write, flush)
				return
			}
			if e.Type != LiveEvent {
				last = e.Seq
			}
			var err error
			if e.Type == LiveEvent {
				err = write("event: %s\ndata: {\"after\":%d}\n\n", LiveEvent, e.Seq)
			} else {
				err = writeEvent(e)
			}
			if err == nil {
				flush()
			}
			sub.Written(e)
			if err != nil {
				return
			}
		case <-recheck.C():
			// Revocation is immediate: a stream opened with a key revoked
			// since ends within one check interval (docs/tenancy.md).
			if err := a.cfg.Credentials.Valid(r.Context(), caller(r)); errors.Is(err, credential.ErrBad) {
				_ = write("event: error\ndata: {\"error\":\"credential_revoked\"}\n\n")
				flush()
				return
			}
			recheck.Reset(a.revalidate())
		}
	}
}

// endStream writes the event that says why the subscription closed.
func (a *API) endStream(sub *Subscription, write func(string, ...any) error, flush func()) {
	var over *OverflowError
	switch err := sub.Err(); {
	case err == nil:
		st, _ := json.Marshal(sub.Final().Status())
		_ = write("event: status\ndata: %s\n\n", st)
	case errors.As(err, &over):
		_ = write("event: end\ndata: {\"reason\":\"subscriber_overflow\",\"resume_after\":%d}\n\n", over.After)
	default:
		return // the request ended, or the store failed: the stream is cut
	}
	flush()
}

// Errors the Cancel function returns for a Turn it cannot cancel now.
var (
	ErrNotRunning = errors.New("api: the Turn is not running")
	ErrFinished   = errors.New("api: the Turn has finished")
)

// cancel asks Core to cancel a Turn. The answer is 202: for a running
// Turn the cancellation receipt, not this request, decides the outcome,
// which the status and the event stream report.
func (a *API) cancel(w http.ResponseWriter, r *http.Request) {
	t, ok := a.turn(w, r)
	if !ok {
		return
	}
	if a.cfg.Cancel == nil {
		writeJSON(w, http.StatusConflict, Error{Error: "not_running", Detail: "this Core runs no Turns"})
		return
	}
	delivery, err := a.cfg.Cancel(r.Context(), t.ID)
	switch {
	case errors.Is(err, ErrFinished):
		writeJSON(w, http.StatusConflict, Error{Error: "turn_finished", Detail: "the Turn has finished"})
	case errors.Is(err, ErrNotRunning):
		writeJSON(w, http.StatusConflict, Error{Error: "not_running", Detail: "the Turn has no running Run to cancel"})
	case err != nil:
		a.internal(w, "cancel turn", err)
	default:
		body := map[string]string{"turn_id": t.ID}
		if delivery != "" {
			body["delivery_id"] = delivery // a running Turn's prompt_cancel
		}
		writeJSON(w, http.StatusAccepted, body)
	}
}
