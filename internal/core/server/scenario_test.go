package server_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/core/store/storetest"
	"github.com/agentwire/agentwire/internal/core/server"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/peer/scenario"
)

// TestCoreScenarios runs every transcript under spec/scenarios/core with
// the real Core (gateway, scheduler, execution, public API, memory store)
// against the scripted Runtime over a real WebSocket on loopback, on a
// manual clock the transcripts move. `go test ./core/server -run
// TestCoreScenarios -rewrite` records new behaviour for review.
func TestCoreScenarios(t *testing.T) {
	files, err := filepath.Glob("../../../spec/scenarios/core/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			scenario.RunScriptedRuntime(t, f, scenario.ScriptedRuntimeOptions{Core: newCoreSide(t)})
		})
	}
}

// TestWireScenarios runs the Core side of every shared wire transcript
// under spec/scenarios/wire: the real Core against a scripted Runtime that
// plays the Runtime's lines (the daemon runs the other side in
// runtime/daemon's TestWireScenarios).
func TestWireScenarios(t *testing.T) {
	files, err := filepath.Glob("../../../spec/scenarios/wire/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			c := newCoreSide(t)
			scenario.RunWireCore(t, f, scenario.ScriptedRuntimeOptions{Core: c}, c.clock.Now)
		})
	}
}

// coreSide is one scenario's Core: an httptest server over server.New.
type coreSide struct {
	st      store.Store
	keys    store.Credentials  // agentwire's keys, kept apart from st as an embedder may
	fail    *storetest.Failing // under st: "store fail|heal"
	srv     *server.Server
	http    *httptest.Server
	clock   *peer.ManualClock
	secrets map[string]string
	creds   map[string]string      // credential IDs by name, for "revoke"
	seen    map[string]int64       // journal position per Turn for "events"
	pending map[string]chan string // "api … async=NAME" calls not yet awaited
}

func newCoreSide(t *testing.T) *coreSide {
	fail := storetest.NewFailing(memory.New())
	c := &coreSide{st: &heldStore{Store: fail}, fail: fail, clock: peer.NewManualClock(time.Unix(1_800_000_000, 0).UTC()), secrets: map[string]string{}, creds: map[string]string{}, seen: map[string]int64{}, pending: map[string]chan string{}}
	mux := http.NewServeMux()
	c.http = httptest.NewServer(mux)
	t.Cleanup(func() {
		for name, ch := range c.pending {
			select {
			case <-ch:
			case <-time.After(30 * time.Second):
				t.Errorf("api call %s never answered", name)
			}
		}
	})
	// Core's log is shown only when the scenario failed: it says what an
	// API answer of 500 hides.
	logs := &scenarioLog{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Core's log:\n%s", logs.String())
		}
	})
	// A small journal backlog, so that a transcript can overflow a Run's
	// subscription with one large frame while the store is held ("store
	// hold"); no other transcript holds the store or sends a Run frame near
	// that size.
	c.keys = memory.New()
	c.srv = server.New(server.Config{Store: c.st, Credentials: c.keys, PublicURL: c.http.URL, Clock: c.clock, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		JournalBacklog: 1 << 10, StallTimeout: scenarioStallTimeout})
	mux.Handle("/", c.srv)
	t.Cleanup(func() {
		c.srv.Close()
		c.http.Close()
	})
	is := credential.Issuer{Store: c.keys, Devices: c.st, Now: c.clock.Now}
	ctx := context.Background()
	issue := func(name string, kind store.CredentialKind, device, project string) {
		cr, s, err := is.Issue(ctx, kind, device, project)
		require.NoError(t, err)
		c.secrets[name] = s.Reveal()
		c.creds[name] = cr.ID
		if name == "revoked" {
			require.NoError(t, is.Revoke(ctx, cr.ID))
		}
	}
	issue("device", store.KindDevice, "dev-1", "p")
	issue("device-2", store.KindDevice, "dev-2", "p")
	issue("other-device", store.KindDevice, "dev-9", "q")
	issue("revoked", store.KindDevice, "dev-1", "p")
	issue("project", store.KindProject, "", "p")
	issue("project-q", store.KindProject, "", "q")
	issue("admin", store.KindAdmin, "", "")
	c.secrets["bad"] = "awd_not-a-credential"
	// "unowned-device" is the credential of dev-0 as a data directory from
	// before devices had projects holds it: stored directly, with no
	// project and no assignment (the issuer refuses that today).
	unowned := credential.Secret("awd_unowned-device-of-an-old-data-directory")
	require.NoError(t, c.keys.CreateCredential(ctx, store.Credential{ID: credential.NewID("cred"), Kind: store.KindDevice,
		DeviceID: "dev-0", Hash: credential.Hash(unowned), CreatedAt: c.clock.Now()}))
	c.secrets["unowned-device"] = unowned.Reveal()
	return c
}

// scenarioStallTimeout is the scenario Core's stall timeout: shorter than
// the default ten minutes, so a transcript shows a stall with a few
// heartbeats in between (the read deadline is 60 s), and longer than any
// other transcript keeps a Run silent.
const scenarioStallTimeout = 2 * time.Minute

// scenarioLog is a log buffer safe for Core's goroutines.
type scenarioLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *scenarioLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *scenarioLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (c *coreSide) URL() string                   { return c.http.URL }
func (c *coreSide) Credential(name string) string { return c.secrets[name] }

func (c *coreSide) Settle(t *testing.T, device string, frames int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		n, ok := c.srv.Gateway().Sync(ctx, device)
		if !ok || n >= frames {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Core did not apply frame %d of %s", frames, device)
		case <-time.After(time.Millisecond):
		}
	}
}

// Do runs Core's directives:
//
//	api METHOD PATH [as=KEY]            input: the JSON body; prints "api: STATUS BODY"
//	api METHOD PATH [as=KEY] async=N    the same call left running (a write answers only once it settled)
//	await N                    the answer of async call N, once it came
//	pending N                  whether async call N is still unanswered (Core applied every frame first)
//	turn [id=T] [until=STATE]  the stored state and public status (waiting for STATE first)
//	events [id=T]              the journal events appended since the last "events"
//	advance by=D               Core's clock moves by D once every connection applied what it read
//	cursor [id=T]              the Turn's input cursor (the last accepted input's Seq)
//	device [id=D] [until=offline|connected]  the registry record of a device
//	revoke name=N              revokes the named credential (as agentwire core credential revoke does)
//	store hold|release         journal commits wait from hold to release (a store that fell behind)
//	store fail|heal            every store write fails from fail to heal (a full disk)
func (c *coreSide) Do(t *testing.T, d *datadriven.TestData, b *scenario.Bindings) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch d.Cmd {
	case "api":
		if len(d.CmdArgs) < 2 || len(d.CmdArgs) > 4 {
			return "", fmt.Errorf("api METHOD PATH [async=NAME] [as=KEY]")
		}
		key := c.secrets[argOr(d, "as", "project")]
		if key == "" {
			return "", fmt.Errorf("api as=%q: no such credential", argOr(d, "as", ""))
		}
		// A query string reads as key=value to the transcript parser.
		path := d.CmdArgs[1].Key
		if len(d.CmdArgs[1].Vals) > 0 {
			path += "=" + strings.Join(d.CmdArgs[1].Vals, ",")
		}
		method, body := d.CmdArgs[0].Key, b.Resolve(strings.TrimSpace(d.Input))
		path = b.Resolve(path)
		if name := argOr(d, "async", ""); name != "" {
			if _, dup := c.pending[name]; dup {
				return "", fmt.Errorf("async call %q already started", name)
			}
			ch := make(chan string, 1)
			c.pending[name] = ch
			go func() {
				actx, acancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer acancel()
				out, err := c.api(actx, key, method, path, body)
				if err != nil {
					out = "api: error " + err.Error() + "\n"
				}
				ch <- out
			}()
			return "", nil
		}
		return c.api(ctx, key, method, path, body)
	case "store":
		hs := c.st.(*heldStore)
		switch {
		case len(d.CmdArgs) == 1 && d.CmdArgs[0].Key == "hold":
			hs.hold()
		case len(d.CmdArgs) == 1 && d.CmdArgs[0].Key == "release":
			hs.release()
		case len(d.CmdArgs) == 1 && d.CmdArgs[0].Key == "fail":
			c.fail.Fail()
		case len(d.CmdArgs) == 1 && d.CmdArgs[0].Key == "heal":
			c.fail.Heal()
		default:
			return "", fmt.Errorf("store hold|release|fail|heal")
		}
		return "", nil
	case "pending":
		if len(d.CmdArgs) != 1 {
			return "", fmt.Errorf("pending NAME")
		}
		ch, ok := c.pending[d.CmdArgs[0].Key]
		if !ok {
			return "", fmt.Errorf("no async call %q", d.CmdArgs[0].Key)
		}
		c.syncAll(ctx)
		if len(ch) == 0 {
			return "pending: " + d.CmdArgs[0].Key + "\n", nil
		}
		return "answered: " + d.CmdArgs[0].Key + "\n", nil
	case "await":
		if len(d.CmdArgs) != 1 {
			return "", fmt.Errorf("await NAME")
		}
		ch, ok := c.pending[d.CmdArgs[0].Key]
		if !ok {
			return "", fmt.Errorf("no async call %q", d.CmdArgs[0].Key)
		}
		select {
		case out := <-ch:
			ch <- out // the cleanup reads it once more
			return out, nil
		case <-ctx.Done():
			return "", fmt.Errorf("async call %q did not answer within 10 s", d.CmdArgs[0].Key)
		}
	case "revoke":
		id, ok := c.creds[argOr(d, "name", "")]
		if !ok {
			return "", fmt.Errorf("revoke name=%q: no such credential", argOr(d, "name", ""))
		}
		if err := (credential.Issuer{Store: c.keys, Devices: c.st, Now: c.clock.Now}).Revoke(ctx, id); err != nil {
			return "", err
		}
		return "revoked: " + argOr(d, "name", "") + "\n", nil
	case "turn":
		c.syncAll(ctx)
		return c.turn(ctx, b.Resolve(argOr(d, "id", "$turn")), argOr(d, "until", ""))
	case "events":
		c.syncAll(ctx)
		return c.events(ctx, b.Resolve(argOr(d, "id", "$turn")))
	case "advance":
		by, err := time.ParseDuration(argOr(d, "by", ""))
		if err != nil || by <= 0 {
			return "", fmt.Errorf("advance by=%q: want a positive Go duration", argOr(d, "by", ""))
		}
		c.syncAll(ctx)
		c.clock.Advance(by)
		return "", nil
	case "cursor":
		c.syncAll(ctx)
		tr, err := c.st.GetTurn(ctx, b.Resolve(argOr(d, "id", "$turn")))
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("cursor: %d\n", tr.InputCursor), nil
	case "device":
		var dv store.Device
		for {
			var err error
			if dv, err = c.st.GetDevice(ctx, argOr(d, "id", "dev-1")); err != nil {
				return "", err
			}
			if u := argOr(d, "until", ""); u == "" || (u == "offline") == !dv.Connected {
				break
			}
			select {
			case <-ctx.Done():
				return "", fmt.Errorf("device %s never became %s", dv.ID, argOr(d, "until", ""))
			case <-time.After(time.Millisecond):
			}
		}
		return fmt.Sprintf("device: %s epoch=%d connected=%t declared=%t\n", dv.ID, dv.OwnerEpoch, dv.Connected, dv.Declaration != nil), nil
	}
	return "", fmt.Errorf("unknown directive %q", d.Cmd)
}

// syncAll lets every connection's loop apply what it already read and
// report what it already wrote.
func (c *coreSide) syncAll(ctx context.Context) {
	for _, dev := range c.srv.Gateway().Connected() {
		c.srv.Gateway().Sync(ctx, dev)
	}
}

func argOr(d *datadriven.TestData, key, def string) string {
	for _, a := range d.CmdArgs {
		if a.Key == key && len(a.Vals) > 0 {
			return a.Vals[0]
		}
	}
	return def
}

func (c *coreSide) api(ctx context.Context, key, method, path, body string) (string, error) {
	// What Core read and what its scheduler does for it are done first,
	// and what the call makes the scheduler do is done before the next
	// directive: a Turn's waiting reason and placement are deterministic.
	c.syncAll(ctx)
	_ = c.srv.Gateway().Settled(ctx)
	defer func() { _ = c.srv.Gateway().Settled(ctx) }()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.http.URL+path, rd)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.Header.Get("Content-Type") == "application/x-tar" {
		return fmt.Sprintf("api: %d %s\n", resp.StatusCode, tarListing(raw)), nil
	}
	return fmt.Sprintf("api: %d %s\n", resp.StatusCode, canonicalJSON(raw)), nil
}

// tarListing writes an archive the API answered as its entries, each with
// its size and a regular file's text, so that a transcript shows what the
// archive holds rather than its bytes.
func tarListing(raw []byte) string {
	var out []string
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			out = append(out, "unreadable: "+err.Error())
			break
		}
		entry := fmt.Sprintf("%s %d", h.Name, h.Size)
		if h.Typeflag == tar.TypeReg {
			body, _ := io.ReadAll(tr)
			entry += fmt.Sprintf(" %q", body)
		}
		out = append(out, entry)
	}
	return fmt.Sprintf("tar (%d bytes): %s", len(raw), strings.Join(out, ", "))
}

// canonicalJSON re-encodes b with sorted keys.
func canonicalJSON(b []byte) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return strings.TrimSpace(string(b))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSpace(buf.String())
}

// turn prints the Turn's stored state and public status, after waiting
// for the stored state until (work the worker does off the connection's
// loop, such as failing a refused preparation, lands a little later).
func (c *coreSide) turn(ctx context.Context, id, until string) (string, error) {
	var tr store.Turn
	for {
		var err error
		if tr, err = c.st.GetTurn(ctx, id); err != nil {
			return "", err
		}
		if until == "" || string(tr.State) == until {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Sprintf("turn: still %s, never %s\n", tr.State, until), nil
		case <-time.After(time.Millisecond):
		}
	}
	st, _ := json.Marshal(tr.Status())
	out := fmt.Sprintf("turn: %s %s", tr.State, st)
	if tr.State == store.TurnQueued && tr.Attempts > 0 {
		out += fmt.Sprintf(" attempts=%d due_in=%s", tr.Attempts, tr.NotBefore.Sub(c.clock.Now()))
	}
	out += "\n"
	if len(tr.Outcome.Evidence) > 0 {
		out += "turn: evidence " + canonicalJSON(tr.Outcome.Evidence) + "\n"
	}
	return out, nil
}

func (c *coreSide) events(ctx context.Context, id string) (string, error) {
	_ = c.srv.Gateway().Settled(ctx) // a placement reason the scheduler journals
	evs, err := c.st.Events(ctx, id, c.seen[id], 0)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&out, "event %d %s %s\n", e.Seq, e.Type, canonicalJSON(e.Payload))
		c.seen[id] = e.Seq
	}
	if out.Len() == 0 {
		return "(no events)\n", nil
	}
	return out.String(), nil
}

// heldStore is the scenario's store: between "store hold" and "store
// release", every commit that journals events waits, as a store that fell
// behind would.
type heldStore struct {
	store.Store
	mu   sync.Mutex
	gate chan struct{} // nil when not held
}

func (h *heldStore) hold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gate == nil {
		h.gate = make(chan struct{})
	}
}

func (h *heldStore) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gate != nil {
		close(h.gate)
		h.gate = nil
	}
}

func (h *heldStore) Commit(ctx context.Context, b store.Batch) (store.BatchResult, error) {
	h.mu.Lock()
	gate := h.gate
	h.mu.Unlock()
	if gate != nil && len(b.Events) > 0 {
		select {
		case <-gate:
		case <-ctx.Done():
		}
	}
	return h.Store.Commit(ctx, b)
}
