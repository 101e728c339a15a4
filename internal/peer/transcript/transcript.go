// Package transcript runs the driver transcripts (spec/scenarios/driver)
// with both roles' real drivers: files that list, in order, the frames each
// peer sends, with native settlement, timer expiry, faults,
// connection loss and reconnection between them. The format is
// cockroachdb/datadriven's: a directive line, an optional input, "----",
// and the expected output, which `go test -rewrite` regenerates.
//
// Directives:
//
//	send from=core|runtime type=T [id=ID]     input: the payload JSON ({} when empty)
//	send from=core|runtime raw                input: a whole frame, written unchecked
//	fail-next-write from=core|runtime         the sender's next write fails
//	native role=R machine=M id=ID event=E     a local event (native settlement, …)
//	advance by=DURATION                       move the shared clock; both sides tick
//	state machine=M id=ID                     each side's state and armed timers
//	disconnect                                the transport drops
//	reconnect                                 a new connection, fresh drivers
//	restart role=R                            R saves its instances, restarts and reconnects
//
// The output of each directive is what the drivers did, sender first: every
// step as "role: machine/id event: from -> to (disposition)" followed by the
// effects that role performed, and every refusal with its reason.
package transcript

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/coder/websocket"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

// Transport names the transports a scenario runs over.
type Transport string

const (
	TransportPipe      Transport = "pipe"
	TransportWebSocket Transport = "websocket"
)

// Options configure a run.
type Options struct {
	Transport Transport
	Tables    []*fsm.Table
	Router    peer.Router
	// NewApp returns the app of one side; nil uses Recorder, which evaluates
	// the guards the driver scenarios need from the frames themselves.
	NewApp func(role fsm.Role) peer.App
	// Config is applied to both drivers' Config before they start (durations,
	// failed-send events, lost events).
	Config func(*peer.Config)
}

// Run runs the scenario file at path with both roles' real drivers, over a
// real transport, checking each directive's output.
func Run(t *testing.T, path string, opts Options) {
	r := &runner{t: t, opts: opts, clock: peer.NewManualClock(time.Unix(1_800_000_000, 0))}
	r.sides = map[fsm.Role]*side{fsm.RoleCore: {role: fsm.RoleCore}, fsm.RoleRuntime: {role: fsm.RoleRuntime}}
	defer r.shutdown()
	r.connect(nil)
	datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
		out, err := r.do(t, d)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return out
	})
}

type runner struct {
	t     *testing.T
	opts  Options
	clock *peer.ManualClock
	sides map[fsm.Role]*side
	srv   *httptest.Server
	// accepted hands the server side of each dialled connection over.
	accepted chan *websocket.Conn
}

// side is one peer: its driver on a Conn, its app and what it logged.
type side struct {
	role      fsm.Role
	app       peer.App
	rec       *log
	conn      *peer.Conn
	transport *faulty
	delivered int
}

func (r *runner) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// connect starts both drivers on a fresh connection. restored, when set,
// holds the instances one side brings back from a restart.
func (r *runner) connect(restored map[fsm.Role][]peer.Saved) {
	a, b := r.transports()
	for role, tr := range map[fsm.Role]peer.Transport{fsm.RoleCore: a, fsm.RoleRuntime: b} {
		s := r.sides[role]
		s.rec = &log{role: role}
		if r.opts.NewApp != nil {
			s.app = &teeApp{inner: r.opts.NewApp(role), rec: s.rec}
		} else {
			s.app = &teeApp{inner: &Recorder{}, rec: s.rec}
		}
		cfg := peer.Config{
			Role: role, Tables: r.opts.Tables, Router: r.opts.Router, App: s.app, Clock: r.clock,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Label: role.String(),
		}
		if r.opts.Config != nil {
			r.opts.Config(&cfg)
		}
		d, err := peer.New(cfg)
		if err != nil {
			r.t.Fatalf("scenario: %s driver: %v", role, err)
		}
		if saved := restored[role]; saved != nil {
			if err := d.Restore(saved); err != nil {
				r.t.Fatalf("scenario: restore %s: %v", role, err)
			}
		}
		s.transport = &faulty{Transport: tr}
		s.conn = peer.NewConn(d, s.transport, peer.ConnConfig{})
		s.delivered = 0
		go func(c *peer.Conn) { _ = c.Run(context.Background()) }(s.conn)
	}
}

func (r *runner) transports() (peer.Transport, peer.Transport) {
	if r.opts.Transport != TransportWebSocket {
		return peer.Pipe()
	}
	if r.srv == nil {
		r.accepted = make(chan *websocket.Conn, 1)
		r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			c, err := websocket.Accept(w, req, nil)
			if err != nil {
				return
			}
			r.accepted <- c
		}))
	}
	accepted := r.accepted
	ctx, cancel := r.ctx()
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.srv.URL, "http"), nil)
	if err != nil {
		r.t.Fatalf("scenario: dial: %v", err)
	}
	return peer.WebSocket(c), peer.WebSocket(<-accepted)
}

// disconnect drops the transport and waits until both loops have ended.
func (r *runner) disconnect() {
	for _, s := range r.order(fsm.RoleCore) {
		_ = s.transport.Close(peer.StatusGoingAway, "scenario disconnect")
	}
	for _, s := range r.order(fsm.RoleCore) {
		<-s.conn.Done()
	}
}

func (r *runner) shutdown() {
	for _, s := range r.sides {
		if s.conn != nil {
			_ = s.conn.Close()
			<-s.conn.Done()
		}
	}
	if r.srv != nil {
		r.srv.Close()
	}
}

// order lists the sides with first in front.
func (r *runner) order(first fsm.Role) []*side {
	other := fsm.RoleRuntime
	if first == fsm.RoleRuntime {
		other = fsm.RoleCore
	}
	return []*side{r.sides[first], r.sides[other]}
}

func (r *runner) do(t *testing.T, d *datadriven.TestData) (string, error) {
	ctx, cancel := r.ctx()
	defer cancel()
	switch d.Cmd {
	case "send":
		return r.send(ctx, d)
	case "fail-next-write":
		s, err := r.side(d, "from")
		if err != nil {
			return "", err
		}
		s.transport.failNext()
		return "ok\n", nil
	case "native":
		return r.native(ctx, d)
	case "advance":
		var by string
		d.ScanArgs(t, "by", &by)
		dur, err := time.ParseDuration(by)
		if err != nil {
			return "", err
		}
		r.clock.Advance(dur)
		for _, s := range r.order(fsm.RoleCore) {
			if err := s.conn.Do(ctx, func(d *peer.Driver) { d.Tick() }); err != nil {
				return "", err
			}
		}
		return r.drain(fsm.RoleCore), nil
	case "state":
		return r.state(ctx, d)
	case "disconnect":
		r.disconnect()
		return r.drain(fsm.RoleCore), nil
	case "reconnect":
		r.disconnect()
		r.drain(fsm.RoleCore)
		r.connect(nil)
		return "connected\n", nil
	case "restart":
		s, err := r.side(d, "role")
		if err != nil {
			return "", err
		}
		var saved []peer.Saved
		if err := s.conn.Do(ctx, func(d *peer.Driver) { saved = d.Snapshot(nil) }); err != nil {
			return "", err
		}
		r.disconnect()
		r.drain(fsm.RoleCore)
		r.connect(map[fsm.Role][]peer.Saved{s.role: saved})
		return fmt.Sprintf("%s restarted with %d instances\n", s.role, len(saved)), nil
	}
	return "", fmt.Errorf("unknown directive %q", d.Cmd)
}

func (r *runner) side(d *datadriven.TestData, key string) (*side, error) {
	for _, a := range d.CmdArgs {
		if a.Key == key && len(a.Vals) == 1 {
			switch a.Vals[0] {
			case "core":
				return r.sides[fsm.RoleCore], nil
			case "runtime":
				return r.sides[fsm.RoleRuntime], nil
			}
			return nil, fmt.Errorf("%s=%s: want core or runtime", key, a.Vals[0])
		}
	}
	return nil, fmt.Errorf("%s=core|runtime is required", key)
}

// Arg is the first value of a directive's key=value argument, "" when
// absent (peer/scenario's runners read their directives with it too).
func Arg(d *datadriven.TestData, key string) string {
	for _, a := range d.CmdArgs {
		if a.Key == key && len(a.Vals) > 0 {
			return a.Vals[0]
		}
	}
	return ""
}

func (r *runner) send(ctx context.Context, d *datadriven.TestData) (string, error) {
	from, err := r.side(d, "from")
	if err != nil {
		return "", err
	}
	to := r.order(from.role)[1]
	input := strings.TrimSpace(d.Input)
	var out strings.Builder
	if d.HasArg("raw") {
		if err := from.transport.Write(ctx, []byte(input)); err != nil {
			return "", err
		}
	} else {
		typ := Arg(d, "type")
		if input == "" {
			input = "{}"
		}
		frame, err := json.Marshal(struct {
			Type    string          `json:"type"`
			ID      string          `json:"id,omitempty"`
			Payload json.RawMessage `json:"payload"`
		}{typ, Arg(d, "id"), json.RawMessage(input)})
		if err != nil {
			return "", err
		}
		dir := wire.CoreToRuntime
		if from.role == fsm.RoleRuntime {
			dir = wire.RuntimeToCore
		}
		msg, err := wire.Decode(frame, dir)
		if err != nil {
			return "", fmt.Errorf("the scenario's frame does not decode: %w", err)
		}
		writes := from.transport.writes()
		err = from.conn.Send(ctx, peer.Outbound{ID: msg.ID, Payload: msg.Payload})
		var werr *peer.WriteError
		if errors.As(err, &werr) {
			// The write failed: the sender's connection is gone, and so is
			// the receiver's once it notices.
			fmt.Fprintf(&out, "%s: %v\n", from.role, err)
			r.disconnect()
			out.WriteString(r.drain(from.role))
			return out.String(), nil
		}
		if err != nil {
			fmt.Fprintf(&out, "%s: send refused: %v\n", from.role, err)
		}
		if from.transport.writes() == writes {
			// Nothing left: the receiver has nothing to react to.
			out.WriteString(r.drain(from.role))
			return out.String(), nil
		}
	}
	if err := r.awaitDelivery(ctx, to); err != nil {
		return "", err
	}
	out.WriteString(r.drain(from.role))
	return out.String(), nil
}

// awaitDelivery waits until s's driver has handled one more frame.
func (r *runner) awaitDelivery(ctx context.Context, s *side) error {
	want := s.delivered + 1
	for {
		var n int
		if err := s.conn.Do(ctx, func(d *peer.Driver) { n = d.Stats().Frames }); err != nil {
			return fmt.Errorf("%s did not receive the frame: %w", s.role, err)
		}
		if n >= want {
			s.delivered = n
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not receive the frame: %w", s.role, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

func (r *runner) native(ctx context.Context, d *datadriven.TestData) (string, error) {
	s, err := r.side(d, "role")
	if err != nil {
		return "", err
	}
	k := peer.Key{Machine: Arg(d, "machine"), ID: Arg(d, "id")}
	var lerr error
	if err := s.conn.Do(ctx, func(drv *peer.Driver) {
		t, ok := drv.Table(k.Machine)
		if !ok {
			lerr = fmt.Errorf("no machine %s", k.Machine)
			return
		}
		e, err := t.ParseEvent(Arg(d, "event"))
		if err != nil {
			lerr = err
			return
		}
		lerr = drv.Local(k, e, nil)
	}); err != nil {
		return "", err
	}
	out := r.drain(s.role)
	if lerr != nil {
		out += fmt.Sprintf("%s: local event refused: %v\n", s.role, lerr)
	}
	return out, nil
}

func (r *runner) state(ctx context.Context, d *datadriven.TestData) (string, error) {
	k := peer.Key{Machine: Arg(d, "machine"), ID: Arg(d, "id")}
	var out strings.Builder
	for _, s := range r.order(fsm.RoleCore) {
		line := ""
		if err := r.with(ctx, s, func(drv *peer.Driver) {
			i, ok := drv.Lookup(k)
			if !ok {
				line = "(no instance)"
				return
			}
			line = i.StateName()
			var timers []string
			for n, tm := range i.Table().Timers {
				if at, ok := i.Deadline(fsm.TimerID(n + 1)); ok {
					timers = append(timers, fmt.Sprintf("%s in %s", tm.Name, at.Sub(r.clock.Now())))
				}
			}
			if len(timers) > 0 {
				line += " [" + strings.Join(timers, ", ") + "]"
			}
		}); err != nil {
			return "", err
		}
		fmt.Fprintf(&out, "%s: %s\n", s.role, line)
	}
	return out.String(), nil
}

// with runs fn on s's driver: on its loop while the connection runs, and
// directly once the loop has ended (nothing else touches the driver then).
func (r *runner) with(ctx context.Context, s *side, fn func(*peer.Driver)) error {
	select {
	case <-s.conn.Done():
		fn(s.conn.Driver())
		return nil
	default:
	}
	err := s.conn.Do(ctx, fn)
	if errors.Is(err, peer.ErrClosed) {
		fn(s.conn.Driver())
		return nil
	}
	return err
}

// drain returns what both sides logged since the last directive, first
// role first.
func (r *runner) drain(first fsm.Role) string {
	var b strings.Builder
	for _, s := range r.order(first) {
		b.WriteString(s.rec.take())
	}
	return b.String()
}

// log collects one side's steps, effects and refusals in order.
type log struct {
	role  fsm.Role
	mu    sync.Mutex
	lines []string
}

func (l *log) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, l.role.String()+": "+fmt.Sprintf(format, args...))
}

func (l *log) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return ""
	}
	s := strings.Join(l.lines, "\n") + "\n"
	l.lines = nil
	return s
}
