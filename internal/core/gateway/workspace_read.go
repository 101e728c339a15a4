package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/preparation"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/link"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/read"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

// Workspace reads (daemon-protocol.txt:175-183). A read of an idle
// Session runs on the Session's scheduling reservation: Core takes the
// reservation, prepares the read-only profile on a device that declares
// workspace_read_preparation, reads once through the granted handle,
// releases the handle and waits for the confirmed close, drops the
// reservation and only then hands the result to its caller. A read of a
// Session whose Turn is running targets that exact Run and holds nothing.
// The workspace_read machine decides every outcome; its hooks below only
// keep the records and hand the settled result to the waiting worker.

// ReadQuery is one public read: a file's bytes (MaxBytes) or one
// directory's entries (MaxEntries); the two limits are exclusive.
type ReadQuery struct {
	Path       string
	Directory  bool
	MaxBytes   int64
	MaxEntries int64
}

// ReadData is a read returned after its confirmed close.
type ReadData struct {
	// Data and Truncated are a byte read's result.
	Data      []byte
	Truncated bool
	// Entries and Truncated are a directory read's result.
	Entries []wire.WorkspaceDirectoryEntry
	// Target says what the read went through: "preparation" (an idle
	// read on the read-only profile) or "run" (the Session's running Run).
	Target   string
	DeviceID string
}

// Errors of ReadWorkspace besides *ReadError.
var (
	// ErrNoWorkspace: the Session's Environment has no bound workspace
	// (type none, or no binding).
	ErrNoWorkspace = errors.New("gateway: the Session's Environment has no bound workspace")
	// ErrSessionBusy: another read holds the Session's reservation, or its
	// Turn was claimed but its Run has not started yet.
	ErrSessionBusy = errors.New("gateway: the Session is busy; try again")
)

// Unavailable reasons of a ReadError: the read returned no data and
// proves nothing about the workspace.
const (
	ReadNoDevice           = "no_device"           // no connected device admits the read
	ReadPreparationFailed  = "preparation_failed"  // the read-only preparation was refused or ended before ready
	ReadUnknown            = read.Unknown          // the read broke off, timed out or its result was unclear
	ReadCleanupUnconfirmed = "cleanup_unconfirmed" // the handle's close was not confirmed
)

// ReadError is a read that returned no data: the Runtime's finite
// rejection code (Rejected), or an Unavailable reason above.
type ReadError struct {
	Code     string
	Rejected bool
	Detail   string
}

func (e *ReadError) Error() string {
	if e.Detail == "" {
		return "gateway: workspace read: " + e.Code
	}
	return "gateway: workspace read: " + e.Code + ": " + e.Detail
}

func unavailable(code, detail string) *ReadError { return &ReadError{Code: code, Detail: detail} }

// Bounds of the waits around a read. The read itself is bounded by the
// machine's read_op timer (12 s).
//
// decision: the protocol bounds the read's waiter but not the admission
// and release around it (daemon-protocol.txt:181, 183); Core waits 30 s
// for ready and 10 s (wire-reference.md §4, settlement wait) for the
// confirmed close, and a wait that runs out returns unavailable without
// data while the Runtime keeps its cleanup ownership.
var (
	readPrepareWait = 30 * time.Second
	readReleaseWait = 10 * time.Second
)

// ReadWorkspace reads one file or lists one directory of the Session's
// bound workspace. It returns data only after the confirmed close; every
// other end is a *ReadError (or ErrNoWorkspace, ErrSessionBusy) without
// data. A read is never retried or replayed (daemon-protocol.txt:181). If
// ctx ends first, the read still runs to its settlement (its reservation
// held until then) and ctx's error is returned.
func (g *Gateway) ReadWorkspace(ctx context.Context, sessionID string, q ReadQuery) (ReadData, error) {
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
	req := wire.WorkspaceRead{EnvironmentID: binding.ID, Path: q.Path, MaxBytes: q.MaxBytes, MaxEntries: q.MaxEntries}
	if q.Directory {
		req.Operation = wire.ReadDirectory
	}
	// The target is set below; validate the rest with a placeholder one.
	if err := (func() error { r := req; r.Handle = "h"; return r.Validate() })(); err != nil {
		return ReadData{}, &ReadError{Code: "invalid_request", Rejected: true, Detail: boundedErr(err)}
	}

	turnID, th, idle := g.holdForIdleRead(ctx, sessionID)
	out := make(chan readEnd, 1)
	if !idle {
		// During active execution the read targets the exact Run
		// (daemon-protocol.txt:183).
		//
		// decision: a Turn claimed but not yet started has no Run to read
		// through, and its admission is not Core's to borrow; a second idle
		// read would need the reservation the first holds. Both answer
		// ErrSessionBusy at once rather than queue behind work whose
		// length nobody bounds (daemon-protocol.txt:183 gives reads the
		// Session's one reservation).
		t, err := g.cfg.Store.GetTurn(ctx, turnID)
		if err != nil || t.State != store.TurnRunning || t.RunID != th.runID || !g.owns(th.c) || th.c.run(th.runID) == nil {
			return ReadData{}, ErrSessionBusy
		}
		req.RunID = th.runID
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			data, err := g.readOnce(th.c, req, "run:"+th.runID)
			data.Target = "run"
			out <- readEnd{data, err}
		}()
	} else {
		p := turnPlan{session: ses, env: env, admit: wire.AdmissionInput{Environment: envType, IdleFilesRead: true}}
		if p.required, err = wire.RequiredCapabilities(p.admit); err != nil {
			g.dropReadHold(sessionID)
			return ReadData{}, err
		}
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			data, err := g.idleRead(p, binding, req)
			data.Target = "preparation"
			// The reservation goes before the result is delivered
			// (daemon-protocol.txt:183).
			g.dropReadHold(sessionID)
			out <- readEnd{data, err}
		}()
	}
	select {
	case end := <-out:
		return end.data, end.err
	case <-ctx.Done():
		return ReadData{}, ctx.Err()
	}
}

type readEnd struct {
	data ReadData
	err  error
}

func boundedErr(err error) string { return link.Bounded(err) }

// idleRead runs the read-only preparation, the read and the release on one
// connection that admits them. The caller holds the Session's reservation.
func (g *Gateway) idleRead(p turnPlan, binding wire.LocalEnvironment, req wire.WorkspaceRead) (ReadData, error) {
	return g.idleOwner(p, binding, func(c *conn, handle string) (ReadData, error) {
		req.Handle = handle
		return g.readOnce(c, req, "handle:"+handle)
	})
}

// idleOwner runs op through a read-only preparation on one connection
// that admits it, then releases the handle; op's data goes out only after
// the confirmed close. The caller holds the Session's reservation.
func (g *Gateway) idleOwner(p turnPlan, binding wire.LocalEnvironment, op func(c *conn, handle string) (ReadData, error)) (ReadData, error) {
	sctx, cancel := g.storeCtx()
	held := g.suspended(sctx, p.env.ID) // suspension.go
	cancel()
	if held {
		return ReadData{}, unavailable(ReadSuspended, "a suspension attempt holds the Environment; nothing was placed")
	}
	var c *conn
	for _, cand := range g.candidates(p) {
		// The final check against the declaration as it is now
		// (daemon-protocol.txt:37).
		if decl, ok := cand.snapshot(); ok && g.owns(cand) {
			if _, ok := admits(decl, p); ok {
				c = cand
				break
			}
		}
	}
	if c == nil {
		return ReadData{}, unavailable(ReadNoDevice, "no connected device declares workspace_read_preparation for agent kind "+p.session.AgentKind)
	}
	log := c.log.With("session_id", p.session.ID)
	if o := g.initialize(c, p.env, p.session.ID); !o.ok { // transfer.go
		return ReadData{}, unavailable(ReadInitializationFailed, "the Environment's initialization ended "+o.status.Outcome+" "+o.status.ErrorCode)
	}
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()

	// The read-only profile: only the bound Environment and the resource
	// identity; no options, model, MCP, native Session, tools or input
	// (daemon-protocol.txt:177).
	prepID := credential.NewID("prep")
	prep := wire.ExecutionPrepare{SessionID: p.session.ID, Configuration: wire.PromptRequest{
		AgentKind: p.session.AgentKind, AgentStateKey: wire.AgentStateKey(p.session.ID),
		LocalEnvironment: &binding, WorkspaceReadOnly: true, ReleaseOnCompletion: true, StrictResume: true,
	}}
	if err := prep.Validate(); err != nil {
		return ReadData{}, unavailable(ReadPreparationFailed, boundedErr(err))
	}
	settle := make(chan fsm.Outcome, 1)
	pr := &prepRec{readOnly: true, result: make(chan prepResult, 1), watch: func(i *peer.Instance) {
		// Read off the table: a terminal state's outcome; the one
		// lasting non-terminal end is cleanup_unconfirmed, whose close
		// the Runtime still owns (daemon-protocol.txt:177).
		if i.Terminal() || preparation.State(i.State()) == preparation.StateCleanupUnconfirmed {
			select {
			case settle <- i.Outcome():
			default:
			}
		}
	}}
	c.mu.Lock()
	c.preps[prepID] = pr
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.preps, prepID)
		c.mu.Unlock()
	}()

	if err := pc.Send(g.ctx, peer.Outbound{ID: prepID, Payload: prep}); err != nil {
		var we *peer.WriteError
		if errors.As(err, &we) {
			return ReadData{}, unavailable(ReadPreparationFailed, "execution_prepare may have been delivered; nothing is replayed")
		}
		return ReadData{}, unavailable(ReadPreparationFailed, "execution_prepare was not sent")
	}
	var res prepResult
	timer := g.cfg.Clock.NewTimer(readPrepareWait)
	select {
	case res = <-pr.result:
	case <-timer.C():
		res.state = "timeout"
	case <-g.ctx.Done():
		res.state = "shutdown"
	}
	timer.Stop()
	if res.state != preparation.StateReady.String() {
		code := res.rejection.ErrorCode
		if code == "" {
			code = res.state
		}
		log.Info("gateway: read-only preparation ended before ready", "state", res.state, "code", code)
		return ReadData{}, unavailable(ReadPreparationFailed, "the read-only preparation ended "+code)
	}

	data, readErr := op(c, res.handle)
	data.DeviceID = c.deviceID

	// The release: data goes out only once the close is confirmed
	// (daemon-protocol.txt:177, 183), whatever the read's outcome.
	closed := false
	if err := pc.Send(g.ctx, peer.Outbound{ID: prepID, Payload: wire.ExecutionRelease{Handle: res.handle}}); err == nil || isWriteError(err) {
		timer := g.cfg.Clock.NewTimer(readReleaseWait)
		select {
		case o := <-settle:
			closed = o == fsm.OutcomeSuccess
		case <-timer.C():
		case <-pc.Done():
		case <-g.ctx.Done():
		}
		timer.Stop()
	}
	// decision: an unconfirmed close hides even a rejection: the one answer
	// is unavailable, so a caller never takes an uncertain cleanup for a
	// settled read (daemon-protocol.txt:183).
	if !closed {
		log.Warn("gateway: the read-only handle's close is not confirmed; the read returns no data", "handle", res.handle)
		if readErr != nil {
			var re *ReadError
			if errors.As(readErr, &re) && !re.Rejected {
				return ReadData{}, readErr
			}
		}
		return ReadData{}, unavailable(ReadCleanupUnconfirmed, "the read-only handle's close was not confirmed")
	}
	if readErr != nil {
		return ReadData{}, readErr
	}
	return data, nil
}

func isWriteError(err error) bool { return link.IsWriteError(err) }

// readOnce sends one workspace_read on c and waits for the machine to
// settle it (internal/read). It never retries (daemon-protocol.txt:181).
func (g *Gateway) readOnce(c *conn, req wire.WorkspaceRead, owner string) (ReadData, error) {
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()
	res, err := c.reads.Once(g.ctx, pc, req, owner)
	if err != nil {
		var end *read.Ended
		if errors.As(err, &end) {
			return ReadData{}, &ReadError{Code: end.Code, Rejected: end.Rejected, Detail: end.Detail}
		}
		return ReadData{}, unavailable(ReadUnknown, boundedErr(err))
	}
	data := ReadData{DeviceID: c.deviceID}
	if d := res.Directory; d != nil {
		data.Entries, data.Truncated = d.Entries, d.Truncated != nil && *d.Truncated
	} else {
		data.Data, data.Truncated = []byte(res.Data), res.Truncated
	}
	return data, nil
}

// readPayload is link.Payload for the gateway's own hooks.
func readPayload[T any](f *fsm.Firing[*peer.Event]) (T, bool) { return link.Payload[T](f) }
