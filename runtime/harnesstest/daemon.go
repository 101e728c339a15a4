package harnesstest

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// The daemon level: the adapter runs end to end through the real daemon
// (runtime/daemon.Run, a registry holding only the adapter under test)
// against a scripted Core on loopback that writes Core's frames as JSON
// text and decodes every frame the daemon sends strictly
// (daemon-protocol.txt:194: neither side imports the other's
// implementation). Each scenario gets a daemon of its own, so the
// Environment it binds is the scenario's workspace and whatever a failed
// scenario leaves behind cannot reach the next one.

func (k *kit) daemonLevel(t *testing.T) {
	text := "text"
	if k.declared("streaming") {
		text = "streaming"
	}
	k.run(t, "daemon", "daemon/streaming", text, func(t *testing.T) { k.daemonStreaming(t, text) })
	k.run(t, "daemon", "daemon/cancellation", "cancellation", k.daemonCancellation)
	if k.declared("resume") {
		k.run(t, "daemon", "daemon/next_turn", "resume", k.daemonNextTurn)
	}
	k.daemonInteractions(t)
	for _, w := range []struct {
		capability     string
		accept, refuse func(*testing.T)
	}{{"workspace_read_preparation", k.daemonRead, k.daemonReadRefused}, {"workspace_output_export", k.daemonExport, k.daemonExportRefused}} {
		if k.declared(w.capability) {
			k.run(t, "daemon", w.capability, w.capability, w.accept)
		} else {
			k.run(t, "daemon", w.capability+"/refused", w.capability, w.refuse)
		}
	}
	k.daemonRefusedConfiguration(t)
}

// daemonStreaming: prepare → ready → start → the Turn's frames until done.
func (k *kit) daemonStreaming(t *testing.T, capability string) {
	plan := Plan{{Say: []string{"one ", "two ", "three"}}}
	s := k.scenario(t, "daemon/streaming", capability, plan, nil, nil)
	c, pid, runID := k.startTurn(t, s)
	c.await(t, new(int), "done of "+runID, func(m wire.Message) bool {
		failedStart(t, m, pid)
		return m.Type == wire.TypeDone && m.ID == runID
	})
	c.stop()
	r := runResult(s, runID, c.frames())
	require.NotNil(t, r.done, "no done for %s", runID)
	assert.Empty(t, r.Errors(), "the Turn reported errors")
	assert.Empty(t, r.after, "frames of %s after its done: a Run's stream ends with done", runID)
	k.checkText(t, &r.Result, plan.Text())
	for i, d := range OfType[wire.Delta](&r.Result) {
		assert.NotEmpty(t, d.Delta, "delta %d is empty", i)
	}
	verify(t, &r.Result, false)
}

// daemonCancellation: Core cancels the Run once it runs natively; the
// receipt proves native settlement (daemon-protocol.txt:85) and follows
// the done that closed the stream, and nothing streams past them.
func (k *kit) daemonCancellation(t *testing.T) {
	plan := Plan{{Say: []string{"Working."}}, {Hang: true}}
	s := k.scenario(t, "daemon/cancellation", "cancellation", plan, nil, nil)
	c, pid, runID := k.startTurn(t, s)
	delivery := k.newID("cancel")
	// A streaming Harness runs natively once it said something; one that
	// does not stream, once the daemon reports the Run started.
	streaming, at := k.declared("streaming"), 0
	c.await(t, &at, "the first delta of "+runID, func(m wire.Message) bool {
		failedStart(t, m, pid)
		if m.Type == wire.TypeDone && m.ID == runID {
			t.Fatalf("%s ended before the kit cancelled it: the plan hangs until cancelled", runID)
		}
		st, ok := m.Payload.(wire.PreparationStatus)
		return streaming && m.Type == wire.TypeDelta && m.ID == runID || !streaming && ok && m.ID == pid && st.State == wire.PreparationStarted
	})
	c.send(t, runID, wire.PromptCancel{DeliveryID: delivery})
	ack := c.await(t, &at, "the cancellation receipt of "+runID, func(m wire.Message) bool {
		a, ok := m.Payload.(wire.InteractionDecisionAck)
		return ok && m.ID == runID && a.DeliveryID == delivery
	}).Payload.(wire.InteractionDecisionAck)
	c.stop()
	require.NotNil(t, ack.Applied)
	if !*ack.Applied && ack.ErrorCode == wire.InteractionCodeRunInactive {
		t.Fatalf("%s ended before the cancellation reached it: the plan hangs until cancelled", runID)
	}
	require.True(t, *ack.Applied, "the cancellation was not applied (%s %s): a cancellation that settled natively is applied", ack.ErrorCode, ack.Error)
	r := runResult(s, runID, c.frames())
	r.Cancelled = true
	require.NotNil(t, r.done, "the cancelled Run never published done")
	// After done only the receipt may come: it answers the cancellation
	// whose stream done closed (spec/scenarios/runtime/cancellation_waits_for_settlement.txt).
	for _, m := range r.after {
		if a, ok := m.Payload.(wire.InteractionDecisionAck); !ok || a.DeliveryID != delivery {
			t.Errorf("%s after the cancelled Run's done: nothing follows it but the receipt", m.Type)
		}
	}
	assert.True(t, r.ackAfterDone, "the receipt came before done: it follows the native settlement that done reports")
	assert.True(t, strings.HasPrefix(plan.Text(), r.Text()), "the cancelled Run said %q, more than the plan's %q", r.Text(), plan.Text())
	if ack.Outcome != nil && r.done.Content != "" {
		assert.Equal(t, r.done.Content, ack.Outcome.Content, "the receipt's outcome is the settled Turn done reported")
	}
	verify(t, &r.Result, false)
}

// daemonNextTurn: Core's next Turn of a Session resumes the native Session
// the last done reported (agent_session_id, strict_resume). Through one
// daemon it is served by the idle Executor the first Turn left, which
// holds that native Session (ready says reused), and it runs there
// (daemon-protocol.txt:60, :72). A Harness whose native Session admits one
// writer would otherwise refuse a fresh Executor beside the idle one.
func (k *kit) daemonNextTurn(t *testing.T) {
	first := k.scenario(t, "daemon/next_turn", "resume", Plan{{Say: []string{"First turn."}}}, nil, nil)
	c, pid, runID := k.startTurn(t, first)
	at := 0
	done := c.await(t, &at, "done of "+runID, func(m wire.Message) bool {
		failedStart(t, m, pid)
		return m.Type == wire.TypeDone && m.ID == runID
	}).Payload.(wire.Done)
	require.NotNil(t, done.Metadata, "done reports no native Session identity to resume")
	id := done.Metadata.AgentSessionID
	require.NotEmpty(t, id, "done reports no native Session ID to resume")
	second := k.scenario(t, "daemon/next_turn/second", "resume", Plan{{Say: []string{"Second turn."}}}, nil, func(s *Scenario) {
		s.SessionID, s.Config, s.WorkspaceDir = first.SessionID, first.Config, first.WorkspaceDir
		s.Config.AgentSessionID, s.Config.StrictResume = id, true
	})
	pid2, run2 := k.newID("prepare"), k.newID("run")
	ready := c.prepare(t, pid2, wire.ExecutionPrepare{SessionID: second.SessionID, Configuration: second.Config})
	require.Equal(t, wire.PreparationReady, ready.State, "the Session's next Turn was not admitted: %s", ready.ErrorCode)
	assert.True(t, ready.Reused, "the next Turn did not reuse the idle Executor that holds its native Session")
	c.send(t, pid2, wire.ExecutionStart{ExecutorID: ready.ExecutorID, Handle: ready.Handle, RunID: run2, Input: second.Input})
	c.await(t, &at, "done of "+run2, func(m wire.Message) bool {
		failedStart(t, m, pid2)
		return m.Type == wire.TypeDone && m.ID == run2
	})
	c.stop()
	r := runResult(second, run2, c.frames())
	require.NotNil(t, r.done, "no done for %s", run2)
	assert.Empty(t, r.Errors(), "the next Turn reported errors")
	k.checkText(t, &r.Result, "Second turn.")
	if r.done.Metadata != nil && r.done.Metadata.AgentSessionID != "" {
		assert.Equal(t, id, r.done.Metadata.AgentSessionID, "the next Turn ran in the native Session it resumed")
	}
	verify(t, &r.Result, false)
}

// startTurn starts s's Turn through a daemon of its own: execution_prepare
// with s.Config → ready → execution_start with s.Input.
func (k *kit) startTurn(t *testing.T, s *Scenario) (c *core, pid, runID string) {
	c = k.startCore(t, s.WorkspaceDir)
	pid, runID = k.newID("prepare"), k.newID("run")
	ready := c.prepare(t, pid, wire.ExecutionPrepare{SessionID: s.SessionID, Configuration: s.Config})
	require.Equal(t, wire.PreparationReady, ready.State, "execution_prepare was not admitted: %s", ready.ErrorCode)
	require.NotEmpty(t, ready.ExecutorID, "ready carries no Executor ID")
	c.send(t, pid, wire.ExecutionStart{ExecutorID: ready.ExecutorID, Handle: ready.Handle, RunID: runID, Input: s.Input})
	return c, pid, runID
}

// readOnly starts a daemon bound to a workspace holding files and asks it
// for the read-only profile as the transcripts do, only the binding and
// the state key; it returns the status that settles the request.
func (k *kit) readOnly(t *testing.T, files map[string]string) (c *core, pid string, st wire.PreparationStatus) {
	dir := t.TempDir()
	for name, body := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	}
	c, pid, sid := k.startCore(t, dir), k.newID("prepare"), k.newSession()
	st = c.prepare(t, pid, wire.ExecutionPrepare{SessionID: sid, Configuration: wire.PromptRequest{AgentKind: k.decl.Kind,
		LocalEnvironment: &wire.LocalEnvironment{ID: environmentID}, AgentStateKey: wire.AgentStateKey(sid),
		WorkspaceReadOnly: true, ReleaseOnCompletion: true, StrictResume: true}})
	return c, pid, st
}

// daemonRead: an idle read through the read-only profile is served from
// the bound Environment's workspace, then the handle is released
// (daemon-protocol.txt:118-120).
func (k *kit) daemonRead(t *testing.T) {
	const name, body = "harnesstest-read.txt", "read me"
	c, pid, st := k.readOnly(t, map[string]string{name: body})
	require.Equal(t, wire.PreparationReady, st.State, "the read-only preparation was not admitted: %s", st.ErrorCode)
	id := k.newID("read")
	c.send(t, id, wire.WorkspaceRead{Handle: st.Handle, EnvironmentID: environmentID, Operation: wire.ReadDirectory, MaxEntries: 64})
	res := c.reply(t, wire.TypeWorkspaceReadResult, id).Payload.(wire.WorkspaceReadResult)
	require.Equal(t, "completed", res.Outcome, "the read of the workspace root failed: %s", res.ErrorCode)
	require.NotNil(t, res.Directory, "a directory read answered without a listing")
	i := slices.IndexFunc(res.Directory.Entries, func(e wire.WorkspaceDirectoryEntry) bool { return e.Name == name })
	require.GreaterOrEqual(t, i, 0, "the listing %+v lacks %s, which the kit put in the workspace", res.Directory.Entries, name)
	assert.Equal(t, wire.EntryFile, res.Directory.Entries[i].Kind)
	if size := res.Directory.Entries[i].SizeBytes; assert.NotNil(t, size, "a regular file's size is reported") {
		assert.EqualValues(t, len(body), *size)
	}
	c.release(t, pid, st.Handle)
	c.stop()
}

// daemonReadRefused: without workspace_read_preparation the read-only
// profile is refused before anything is prepared (daemon-protocol.txt:177).
func (k *kit) daemonReadRefused(t *testing.T) {
	c, pid, st := k.readOnly(t, nil)
	k.readOnlyRefused(t, st)
	c.stop()
	assert.Len(t, ofID(c.frames(), pid), 1, "a rejected execution_prepare is answered once, with nothing prepared")
}

// readOnlyRefused asserts the rejection of a read-only prepare; the daemon
// checks preparation before the read-only profile.
func (k *kit) readOnlyRefused(t *testing.T, st wire.PreparationStatus) {
	t.Helper()
	want := wire.PrepCodeUnsupportedReadPreparation
	if !k.declared("preparation") {
		want = wire.PrepCodeUnsupportedPreparation
	}
	require.Equal(t, wire.PreparationRejected, st.State, "a read-only preparation was admitted without workspace_read_preparation")
	assert.Equal(t, want, st.ErrorCode)
	assert.Equal(t, wire.PreparationOpPrepare, st.Operation)
}

// daemonExport: the outputs directory of the workspace is exported as a
// tar archive through a ready read-only preparation, chunk by chunk, and
// nothing outside it is (wire-reference §2.11).
func (k *kit) daemonExport(t *testing.T) {
	const name, body = "outputs/harnesstest-report.txt", "exported by the kit"
	c, pid, st := k.readOnly(t, map[string]string{name: body, "notes.txt": "not an output"})
	require.Equal(t, wire.PreparationReady, st.State,
		"the export's owner, a read-only preparation, was not admitted (%s): an export needs workspace_read_preparation too", st.ErrorCode)
	files := untar(t, c.export(t, st.Handle))
	assert.Equal(t, body, files[name], "the archive %v lacks %s as the kit wrote it", slices.Sorted(maps.Keys(files)), name)
	assert.NotContains(t, files, "notes.txt", "a file outside outputs/ was exported")
	c.release(t, pid, st.Handle)
	c.stop()
}

// daemonExportRefused: without workspace_output_export no export begins,
// even through a ready read-only preparation.
func (k *kit) daemonExportRefused(t *testing.T) {
	c, pid, st := k.readOnly(t, map[string]string{"outputs/report.txt": "never exported"})
	handle := "kit-no-handle"
	if k.declared("workspace_read_preparation") {
		require.Equal(t, wire.PreparationReady, st.State, "the read-only preparation was not admitted: %s", st.ErrorCode)
		handle = st.Handle
	} else {
		k.readOnlyRefused(t, st) // no owner can exist: its refusal is the export's
	}
	id := k.newID("export")
	c.send(t, id, wire.WorkspaceExport{Step: wire.ExportBegin, Handle: handle, EnvironmentID: environmentID})
	res := c.reply(t, wire.TypeWorkspaceExportResult, id).Payload.(wire.WorkspaceExportResult)
	assert.Equal(t, "rejected", res.Outcome, "an export began without workspace_output_export")
	assert.Equal(t, "resource_unavailable", res.ErrorCode)
	assert.Empty(t, res.Data, "a refused export carries no data")
	if st.State == wire.PreparationReady {
		c.release(t, pid, st.Handle)
	}
	c.stop()
}

// daemonRefusedConfiguration: an execution_prepare asking for something
// the declaration does not support is rejected unsupported_configuration
// before any native call (daemon-protocol.txt:27, :157).
func (k *kit) daemonRefusedConfiguration(t *testing.T) {
	probe := &Scenario{SessionID: k.newSession()}
	k.base(t, probe)
	var pick func(*wire.PromptRequest)
	var capability string
	for _, ask := range unsupportedAsks {
		cfg := probe.Config
		ask(&cfg)
		var ue *harness.UnsupportedError
		if errors.As(harness.CheckConfiguration(k.caps, cfg), &ue) &&
			(wire.ExecutionPrepare{SessionID: probe.SessionID, Configuration: cfg}).Validate() == nil {
			pick, capability = ask, ue.Capability
			break
		}
	}
	if pick == nil {
		t.Log("harnesstest: the declaration supports every configuration the kit can ask for; no refusal to check")
		return
	}
	k.run(t, "daemon", "daemon/refused_configuration", capability, func(t *testing.T) {
		s := k.scenario(t, "daemon/refused_configuration", capability, Plan{{Say: []string{"This is never said."}}}, nil, func(s *Scenario) {
			pick(&s.Config)
			s.Refused = true
		})
		require.Error(t, harness.CheckConfiguration(k.caps, s.Config), "the hook made the configuration supported again")
		c, pid := k.startCore(t, s.WorkspaceDir), k.newID("prepare")
		before := k.nativeCalls()
		st := c.prepare(t, pid, wire.ExecutionPrepare{SessionID: s.SessionID, Configuration: s.Config})
		assert.Equal(t, wire.PreparationRejected, st.State, "a configuration asking for %s was admitted", capability)
		assert.Equal(t, wire.PrepCodeUnsupportedConfiguration, st.ErrorCode)
		assert.Equal(t, wire.PreparationOpPrepare, st.Operation)
		assert.Empty(t, st.Handle, "a rejection reserves no handle")
		k.noNativeCall(t, before)
		c.stop()
		assert.Len(t, ofID(c.frames(), pid), 1, "a rejected execution_prepare is answered once, with nothing prepared")
	})
}

// unsupportedAsks are configurations a Harness may not support, in the
// order the kit tries them; the refusal names the capability the first
// unsupported member needs (harness.CheckConfiguration).
var unsupportedAsks = []func(*wire.PromptRequest){
	func(c *wire.PromptRequest) { c.ToolSearch, c.FunctionTools = true, kitFunction(true) },
	controls(func(c *wire.PromptRequest, ec *wire.ExecutionControls) {
		c.ObserveMessages = true
		ec.OutputFormat = &wire.OutputFormat{Type: wire.OutputFormatJSONSchema, Schema: wire.NativeJSON(`{"type":"object"}`)}
	}),
	controls(func(_ *wire.PromptRequest, ec *wire.ExecutionControls) { ec.TextVerbosity = wire.TextVerbosityHigh }),
	controls(func(_ *wire.PromptRequest, ec *wire.ExecutionControls) { ec.WebSearch = wire.WebSearchLive }),
	controls(func(_ *wire.PromptRequest, ec *wire.ExecutionControls) { ec.DisableProgrammaticToolCalling = true }),
	func(c *wire.PromptRequest) { c.ObserveMessages = true },
	func(c *wire.PromptRequest) { c.FunctionTools = kitFunction(false) },
	func(c *wire.PromptRequest) { c.DisableSubagents, c.ObserveSubagentIdentities = false, true },
	func(c *wire.PromptRequest) { c.DisableSubagents, c.ObserveSubagentIdentities = true, false },
	func(c *wire.PromptRequest) { c.AgentSessionID, c.RequireExistingNativeSession = "kit-native", false },
}

func kitFunction(deferred bool) []wire.FunctionTool {
	return []wire.FunctionTool{{Name: "kit_lookup", Description: "Looks something up.",
		Parameters: wire.NativeJSON(`{"type":"object"}`), DeferLoading: deferred}}
}

// controls asks through the execution controls, changing a copy of them
// so that a probe never reaches the configuration it was copied from.
func controls(set func(*wire.PromptRequest, *wire.ExecutionControls)) func(*wire.PromptRequest) {
	return func(c *wire.PromptRequest) {
		ec := wire.ExecutionControls{WebSearch: wire.WebSearchDisabled, TextVerbosity: wire.TextVerbosityMedium}
		if c.ExecutionControls != nil {
			ec = *c.ExecutionControls
		}
		set(c, &ec)
		c.ExecutionControls = &ec
	}
}

// failedStart fails t when m reports that the preparation pid or its
// start was refused or failed: the Run awaited will never come.
func failedStart(t *testing.T, m wire.Message, pid string) {
	t.Helper()
	if st, ok := m.Payload.(wire.PreparationStatus); ok && m.ID == pid &&
		(st.State == wire.PreparationRejected || st.State == wire.PreparationFailed || st.State == wire.PreparationExpired) {
		t.Fatalf("%s: %s %s (%s)", pid, st.Operation, st.State, st.ErrorCode)
	}
}

// daemonRun is one Run as Core saw it: its frames until done as a Result
// (without Core's receipts), and what came after done.
type daemonRun struct {
	Result
	done         *wire.Done
	after        []wire.Message
	ackAfterDone bool
}

func runResult(s *Scenario, runID string, fs []wire.Message) *daemonRun {
	r := &daemonRun{Result: Result{Scenario: s, RunID: runID}}
	for _, m := range ofID(fs, runID) {
		if r.done != nil {
			_, isAck := m.Payload.(wire.InteractionDecisionAck)
			r.after, r.ackAfterDone = append(r.after, m), r.ackAfterDone || isAck
			continue
		}
		switch p := m.Payload.(type) {
		case wire.Done:
			r.done, r.Done, r.Returned = &p, p, true
		case wire.InteractionDecisionAck: // Core's receipt, not the Turn's
		default:
			r.Events = append(r.Events, p)
		}
	}
	return r
}

// ofID returns the frames whose id is id.
func ofID(fs []wire.Message, id string) []wire.Message {
	return slices.DeleteFunc(slices.Clone(fs), func(m wire.Message) bool { return m.ID != id })
}

// core is a scripted Core serving one daemon over a loopback WebSocket.
type core struct {
	k        *kit
	t        *testing.T
	srv      *httptest.Server
	bindings *daemon.Bindings
	ws       *websocket.Conn
	cancel   context.CancelFunc // ends the daemon's context
	ran      chan error         // daemon.Run's result
	abandon  chan struct{}
	log      *lockedBuffer
	dials    atomic.Int32
	once     sync.Once

	mu      sync.Mutex
	got     []wire.Message
	bad     []string // frames that did not decode strictly
	readErr error
	wake    chan struct{}
	closed  chan struct{} // the reader ended: the connection is closed
}

// startCore runs the daemon with only the adapter under test registered
// and the kit's Environment bound to dir when dir is set, and returns
// once its first heartbeat advertised the adapter's declaration. The
// daemon stops at the latest when t ends.
func (k *kit) startCore(t *testing.T, dir string) *core {
	t.Helper()
	c := &core{k: k, t: t, ran: make(chan error, 1), abandon: make(chan struct{}), log: &lockedBuffer{},
		wake: make(chan struct{}, 1), closed: make(chan struct{})}
	accepted := make(chan *websocket.Conn, 1)
	mux := http.NewServeMux()
	mux.HandleFunc(daemon.BootstrapPath, func(w http.ResponseWriter, r *http.Request) {
		// An interval beyond any scenario keeps periodic heartbeats out.
		_ = json.NewEncoder(w).Encode(daemon.Bootstrap{DeviceID: "harnesstest", WSURL: "ws://" + r.Host + daemon.WSPath,
			HeartbeatSeconds: 3600, ProtocolVersion: wire.Version})
	})
	mux.HandleFunc(daemon.WSPath, func(w http.ResponseWriter, r *http.Request) {
		if c.dials.Add(1) > 1 {
			// A second dial means the first connection was lost; nothing
			// of the scenario would be replayed on another.
			http.Error(w, "harnesstest: one connection per scenario", http.StatusServiceUnavailable)
			return
		}
		if ws, err := websocket.Accept(w, r, nil); err == nil {
			ws.SetReadLimit(wire.MaxFrameBytes)
			accepted <- ws
		}
	})
	c.srv = httptest.NewServer(mux)
	reg := harness.NewRegistry()
	require.NoError(t, reg.Register(k.cfg.Adapter), "the daemon's registry refused the adapter")
	if dir != "" {
		c.bindings = daemon.NewBindings()
		require.NoError(t, c.bindings.Add(environmentID, dir))
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		c.ran <- daemon.Run(ctx, daemon.Config{CoreURL: c.srv.URL, DeviceID: "harnesstest",
			Credential: daemon.NewCredential("harnesstest-credential"), Registry: reg, Environments: c.bindings, Abandon: c.abandon,
			Logger: slog.New(slog.NewTextHandler(c.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
			// Without keep-alive no idle connection outlives the daemon.
			HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: k.timeout},
			MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	}()
	t.Cleanup(c.stop)
	wait, done := k.deadline()
	defer done()
	select {
	case c.ws = <-accepted:
	case err := <-c.ran:
		c.ran <- err // for stop
		t.Fatalf("daemon.Run returned before it connected: %v", err)
	case <-wait.Done():
		t.Fatalf("the daemon did not connect within %v", k.timeout)
	}
	go c.read()
	hb := c.await(t, new(int), "the first heartbeat", func(m wire.Message) bool { return m.Type == wire.TypeHeartbeat }).Payload.(wire.Heartbeat)
	kind, ok := hb.AgentKind(k.decl.Kind)
	require.True(t, ok, "the heartbeat does not advertise kind %s", k.decl.Kind)
	require.True(t, kind.IsAvailable(), "the heartbeat advertises kind %s as unavailable", k.decl.Kind)
	require.Equal(t, k.caps, kind.Capabilities, "the heartbeat advertises other capabilities than the declaration (daemon-protocol.txt:14)")
	return c
}

// read decodes every frame the daemon sends, strictly, until the
// connection closes.
func (c *core) read() {
	defer close(c.closed)
	for {
		_, b, err := c.ws.Read(context.Background())
		c.mu.Lock()
		switch m, derr := wire.Decode(b, wire.RuntimeToCore); {
		case err != nil:
			c.readErr = err
		case derr != nil:
			c.bad = append(c.bad, fmt.Sprintf("%v: %.300s", derr, b))
		default:
			c.got = append(c.got, m)
		}
		c.mu.Unlock()
		select {
		case c.wake <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// frames returns what the daemon sent so far.
func (c *core) frames() []wire.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.got)
}

// send writes one of Core's frames, validated as Core would send it.
func (c *core) send(t *testing.T, id string, p wire.Payload) {
	t.Helper()
	b, err := wire.Encode(id, p, "")
	require.NoError(t, err, "the kit built an invalid %s", p.MessageType())
	ctx, cancel := c.k.deadline()
	defer cancel()
	require.NoError(t, c.ws.Write(ctx, websocket.MessageText, b), "core: writing %s", p.MessageType())
}

// await returns the first frame from index *at on that match accepts and
// moves *at past it. It fails t when a frame did not decode, the
// connection closed or the kit's timeout passed first.
func (c *core) await(t *testing.T, at *int, what string, match func(wire.Message) bool) wire.Message {
	t.Helper()
	ctx, cancel := c.k.deadline()
	defer cancel()
	for {
		c.mu.Lock()
		got, bad, closed := c.got, c.bad, c.readErr
		c.mu.Unlock()
		if len(bad) > 0 {
			t.Fatalf("the daemon sent a frame that does not decode strictly: %s", bad[0])
		}
		for ; *at < len(got); *at++ {
			if match(got[*at]) {
				*at++
				return got[*at-1]
			}
		}
		if closed != nil {
			t.Fatalf("the connection closed (%v) while Core waited for %s", closed, what)
		}
		select {
		case <-c.wake:
		case <-ctx.Done():
			t.Fatalf("no %s within %v", what, c.k.timeout)
		}
	}
}

// prepare sends execution_prepare id and returns the status that settles
// it (any but preparing).
func (c *core) prepare(t *testing.T, id string, p wire.ExecutionPrepare) wire.PreparationStatus {
	t.Helper()
	c.send(t, id, p)
	return c.status(t, id, wire.PreparationPreparing)
}

// status awaits the first preparation_status of id in a state other than
// the ones passed over.
func (c *core) status(t *testing.T, id string, passOver ...string) wire.PreparationStatus {
	t.Helper()
	return c.await(t, new(int), "the preparation_status of "+id, func(m wire.Message) bool {
		st, ok := m.Payload.(wire.PreparationStatus)
		return ok && m.ID == id && !slices.Contains(passOver, st.State)
	}).Payload.(wire.PreparationStatus)
}

// reply awaits the frame of type typ answering the request id.
func (c *core) reply(t *testing.T, typ, id string) wire.Message {
	t.Helper()
	return c.await(t, new(int), typ+" "+id, func(m wire.Message) bool { return m.Type == typ && m.ID == id })
}

// release abandons the handle of preparation id and requires released:
// the daemon publishes it only once the local close succeeded
// (daemon-protocol.txt:118).
func (c *core) release(t *testing.T, id, handle string) {
	t.Helper()
	c.send(t, id, wire.ExecutionRelease{Handle: handle})
	st := c.status(t, id, wire.PreparationPreparing, wire.PreparationReady)
	require.Equal(t, wire.PreparationReleased, st.State, "the release of %s was answered %s %s", id, st.State, st.ErrorCode)
}

// export pulls the outputs archive through handle, chunk after chunk,
// and returns it.
func (c *core) export(t *testing.T, handle string) []byte {
	t.Helper()
	id := c.k.newID("export")
	c.send(t, id, wire.WorkspaceExport{Step: wire.ExportBegin, Handle: handle, EnvironmentID: environmentID})
	var archive []byte
	at := 0
	for {
		// Each result answers the request sent before it.
		res := c.await(t, &at, "workspace_export_result "+id, func(m wire.Message) bool {
			return m.Type == wire.TypeWorkspaceExportResult && m.ID == id
		}).Payload.(wire.WorkspaceExportResult)
		switch res.Outcome {
		case "chunk":
			require.EqualValues(t, len(archive), *res.Offset, "a chunk starts where the archive pulled so far ends")
			archive = append(archive, res.Data...)
			c.send(t, id, wire.WorkspaceExport{Step: wire.ExportNext, Offset: int64(len(archive))})
		case "completed":
			require.EqualValues(t, len(archive), *res.Offset, "completed reports the archive's length")
			return archive
		default:
			t.Fatalf("the export %s ended %s: %s", id, res.Outcome, res.ErrorCode)
		}
	}
}

// stop ends the daemon's context, reads until the daemon closed the
// connection and requires that daemon.Run returned nil. Each wait is
// bounded by the kit's timeout; past it the daemon abandons its Executors
// (Config.Abandon) so that the test still ends.
func (c *core) stop() {
	c.once.Do(func() {
		t := c.t
		c.cancel()
		wait, done := c.k.deadline()
		defer done()
		if c.ws != nil {
			select {
			case <-c.closed:
			case <-wait.Done():
				t.Errorf("the daemon did not close its connection within %v of stopping", c.k.timeout)
			}
		}
		select {
		case err := <-c.ran:
			assert.NoError(t, err, "daemon.Run did not stop cleanly")
		case <-wait.Done():
			t.Errorf("daemon.Run did not return within %v of stopping: an Executor never closed; abandoning it", c.k.timeout)
			close(c.abandon)
			again, cancel := c.k.deadline()
			defer cancel()
			select {
			case <-c.ran:
			case <-again.Done():
				t.Errorf("daemon.Run did not return even after its Executors were abandoned")
			}
		}
		if c.ws != nil {
			_ = c.ws.CloseNow()
			<-c.closed // CloseNow ends the reader's Read at once
		}
		c.srv.Close()
		assert.NoError(t, c.bindings.Close()) // nil Bindings close nothing
		c.mu.Lock()
		assert.Empty(t, c.bad, "frames that do not decode strictly")
		c.mu.Unlock()
		assert.LessOrEqual(t, c.dials.Load(), int32(1), "the daemon lost its connection and dialled again")
		if t.Failed() {
			c.log.Lock()
			t.Logf("the daemon's log:\n%s", c.log.String())
			c.log.Unlock()
		}
	})
}

// lockedBuffer is the daemon's log, written from its goroutines.
type lockedBuffer struct {
	sync.Mutex
	bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.Lock()
	defer l.Unlock()
	return l.Buffer.Write(p)
}

// untar reads an archive into its regular files' contents by name.
func untar(t *testing.T, archive []byte) map[string]string {
	t.Helper()
	files := map[string]string{}
	r := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		require.NoError(t, err, "the export is not a tar archive")
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(r)
			require.NoError(t, err, "reading %s from the export", h.Name)
			files[h.Name] = string(b)
		}
	}
}
