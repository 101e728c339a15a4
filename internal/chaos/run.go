// Package chaos runs a real Core (SQLite) and two real Runtimes through a
// TCP proxy that cuts their connections, SIGKILLs and restarts the three
// processes at random moments, drives a few hundred Turns with active
// input and permission questions through the public API, and then proves
// from the store, Core's transcripts and the agents' own logs that
// nothing was lost, invented or replayed (docs/chaos.md).
//
// Everything random is drawn from one seed; the processes' own timing is
// not, so a seed replays the same schedule of faults and answers, not the
// same interleaving.
package chaos

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/agentwire/agentwire/core/store"
)

// PlacementTimeout is Core's placement timeout in the run: short, so a
// Turn of a Session that can no longer be placed (see workload.replace)
// fails unplaceable within the run instead of after Core's 5 minutes.
const PlacementTimeout = 15 * time.Second

// AgentPace is how long echo-agent waits before each delta: a Turn of
// the workload then takes about a second of the agent's time, so kills and
// cuts land in every phase of it.
const AgentPace = 120 * time.Millisecond

// Config is one chaos run.
type Config struct {
	Seed  uint64
	Turns int // Turns the workload submits
	Kills int // at most this many SIGKILLs (Core and Runtimes together)
	Cuts  int // at most this many connections cut by the proxy
	// Budget bounds the whole run: the chaos phase takes at most 60 % of
	// it, the quiet phase that lets the last Turns end the rest.
	Budget time.Duration
	Dir    string // an empty directory for the data, transcripts and logs
	Bin    string // the agentwire binary
	Agent  string // the echo-agent binary
	Caps   string // its capabilities file
	Out    io.Writer
	// Replicas, when more than 1, runs that many Core replicas on the
	// PostgreSQL database Store instead of one Core on SQLite, and kills
	// one replica for good instead of the random kills (replicas.go).
	Replicas int
	Store    string
}

// Result is what a run did and what the checker found.
type Result struct {
	Turns    int            // Turns in the store
	ByState  map[string]int // "completed", "failed/event_stream_incomplete", ...
	Kills    map[string]int // by process
	Cuts     int
	Answers  int64
	Inputs   int64
	Cancels  int64
	Writes   int64
	GaveUp   int   // Turns the driver stopped following before they ended
	Replaced int64 // Sessions replaced after a Turn failed unplaceable
	// LateCancels counts Turns that failed cancel_unconfirmed although an
	// applied cancellation receipt arrived after Core's 15 s bound.
	LateCancels int
	// What the checker read: Core's frames, the agents' records and the
	// execution_start frames among the frames.
	Frames, AgentRecords, Starts int
	CoreGens                     int
	Duration                     time.Duration
	Violations                   []Violation
	// ReplicaLost counts the Turns another replica reconciled once the
	// killed replica's leases expired (replica runs).
	ReplicaLost int
}

// Run runs the chaos and checks it.
func Run(ctx context.Context, cfg Config) (Result, error) {
	start := time.Now()
	res := Result{ByState: map[string]int{}, Kills: map[string]int{}}
	if cfg.Replicas > 1 {
		return runReplicas(ctx, cfg, res, start)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Budget)
	defer cancel()
	data := filepath.Join(cfg.Dir, "data")
	keys := map[string]string{}
	for _, project := range []string{"p1", "p2"} {
		k, err := issue(cfg, data, "--kind", "project", "--project", project)
		if err != nil {
			return res, err
		}
		keys[project] = k
		// Kept for a look at the run afterwards (agentwire --api-key).
		if err := os.WriteFile(filepath.Join(cfg.Dir, project+".key"), []byte(k), 0o600); err != nil {
			return res, fmt.Errorf("keep the API key: %w", err)
		}
	}
	devices := map[string]string{"dev-1": "p1", "dev-2": "p2"}
	for dev, project := range devices {
		if _, err := issue(cfg, data, "--kind", "device", "--device", dev, "--project", project, "--out", filepath.Join(cfg.Dir, dev+".credential")); err != nil {
			return res, err
		}
	}
	coreAddr, err := freeAddr()
	if err != nil {
		return res, err
	}
	proxy, err := NewProxy(coreAddr, cfg.Seed, cfg.Cuts)
	if err != nil {
		return res, err
	}
	defer proxy.Close()
	proxyURL := "http://" + proxy.Addr()
	core := &proc{name: "core", bin: cfg.Bin, log: filepath.Join(cfg.Dir, "core.log"), ready: "agentwire core: listening on ",
		args: func(gen int) []string {
			return []string{"core", "serve", "--listen", coreAddr, "--data", data, "--public-url", proxyURL,
				"--placement-timeout", PlacementTimeout.String(),
				"--transcript", filepath.Join(cfg.Dir, fmt.Sprintf("frames-%d.jsonl", gen))}
		}}
	if err := core.start(); err != nil {
		return res, err
	}
	defer core.stop(20 * time.Second)
	clients := map[string]*client{}
	for p, k := range keys {
		clients[p] = newClient("http://"+coreAddr, k)
	}

	sessions, envArgs, err := setupSessions(ctx, cfg, clients, devices)
	if err != nil {
		return res, err
	}
	runtimes, err := startRuntimes(cfg, proxyURL, envArgs)
	for _, rt := range runtimes {
		defer rt.stop(30 * time.Second)
	}
	if err != nil {
		return res, err
	}

	w := &workload{seed: cfg.Seed, clients: clients, sessions: sessions, turns: cfg.Turns,
		turnBudget: min(cfg.Budget/3, 2*time.Minute), observed: map[string][]string{}}
	fmt.Fprintf(cfg.Out, "chaos: %d Sessions on 2 devices, Core at %s, Runtimes through the proxy at %s\n", len(sessions), coreAddr, proxy.Addr())
	workDone := make(chan struct{})
	go func() {
		w.run(ctx)
		close(workDone)
	}()

	// The chaos phase: kills at random moments until the bound, the
	// workload's end or 60 % of the budget; then the quiet phase.
	chaosCtx, stopChaos := context.WithTimeout(ctx, cfg.Budget*6/10)
	kills, killErr := chaosLoop(chaosCtx, cfg, core, runtimes, workDone, w, res.Kills)
	stopChaos()
	proxy.SetCutting(false)
	if killErr != nil {
		return res, killErr
	}
	fmt.Fprintf(cfg.Out, "chaos: %d kills, %d cuts, %d of %d Turns submitted; quiet phase\n", kills, proxy.Cuts.Load(), w.submitted.Load(), cfg.Turns)
	select {
	case <-workDone:
	case <-ctx.Done():
		fmt.Fprintf(cfg.Out, "chaos: the budget of %v ended before the workload did (%d of %d Turns submitted)\n", cfg.Budget, w.submitted.Load(), cfg.Turns)
	}
	// With the faults over, a new Session on each Environment must run a
	// Turn to completion: the system recovered.
	recovery := w.recover(ctx, cfg.Turns)
	finalCtx, cancelFinal := context.WithTimeout(context.Background(), time.Minute)
	w.finalStates(finalCtx)
	cancelFinal()
	for _, rt := range runtimes {
		rt.stop(30 * time.Second)
	}
	core.stop(20 * time.Second)
	res.CoreGens = core.generation()
	res.Cuts = int(proxy.Cuts.Load())
	loadCtx, cancelLoad := context.WithTimeout(context.Background(), time.Minute)
	defer cancelLoad()
	ev, err := LoadEvidence(loadCtx, cfg.Dir, data, w.sessionIDs(), w.observed)
	if err != nil {
		return res, err
	}
	return finish(res, w, ev, recovery, start), nil
}

// setupSessions registers two Environments per device, each with an
// initialization (a variable and a file, so every connection that serves
// it carries a transfer), and two Sessions per Environment; it returns
// the Sessions and each device's --environment arguments.
func setupSessions(ctx context.Context, cfg Config, clients map[string]*client, devices map[string]string) ([]sessionRef, map[string][]string, error) {
	var sessions []sessionRef
	envArgs := map[string][]string{}
	for _, dev := range []string{"dev-1", "dev-2"} {
		project := devices[dev]
		for i := range 2 {
			envID, err := createEnvironment(ctx, clients[project], dev, i)
			if err != nil {
				return nil, nil, err
			}
			ws := filepath.Join(cfg.Dir, "ws", envID)
			if err := os.MkdirAll(ws, 0o700); err != nil {
				return nil, nil, fmt.Errorf("workspace: %w", err)
			}
			envArgs[dev] = append(envArgs[dev], "--environment", envID+"="+ws)
			for range 2 {
				sid, err := createSession(ctx, clients[project], envID)
				if err != nil {
					return nil, nil, err
				}
				sessions = append(sessions, sessionRef{ID: sid, Project: project, Environment: envID})
			}
		}
	}
	return sessions, envArgs, nil
}

// startRuntimes starts one Runtime per device against coreURL; it
// returns those it started, also on an error.
func startRuntimes(cfg Config, coreURL string, envArgs map[string][]string) ([]*proc, error) {
	var runtimes []*proc
	for _, dev := range []string{"dev-1", "dev-2"} {
		rt := &proc{name: dev, bin: cfg.Bin, log: filepath.Join(cfg.Dir, "runtime-"+dev+".log"),
			env: []string{"ECHO_AGENT_LOG=" + filepath.Join(cfg.Dir, "agent-"+dev+".log"), fmt.Sprintf("ECHO_AGENT_PACE_MS=%d", AgentPace.Milliseconds())},
			args: func(int) []string {
				return append([]string{"runtime", "--core", coreURL, "--device-id", dev,
					"--credential-file", filepath.Join(cfg.Dir, dev+".credential"),
					"--harness", "exec:echo=" + cfg.Agent + ":" + cfg.Caps,
					"--state", filepath.Join(cfg.Dir, "state-"+dev)}, envArgs[dev]...)
			}}
		if err := rt.start(); err != nil {
			return runtimes, err
		}
		runtimes = append(runtimes, rt)
	}
	return runtimes, nil
}

// finish fills in what the workload did and what the checker found.
func finish(res Result, w *workload, ev Evidence, recovery []string, start time.Time) Result {
	res.Answers, res.Inputs, res.Cancels, res.Writes = w.answers.Load(), w.inputs.Load(), w.cancels.Load(), w.writes.Load()
	for _, r := range w.runs {
		if r.GaveUp {
			res.GaveUp++
		}
	}
	res.Replaced = w.replaced.Load()
	res.Turns = len(ev.Turns)
	for _, t := range ev.Turns {
		k := string(t.Turn.State)
		if t.Turn.Outcome.Reason != "" {
			k += "/" + t.Turn.Outcome.Reason
		}
		res.ByState[k]++
		if t.Turn.Outcome.Reason == "cancel_unconfirmed" && lateApplied(t.Events) {
			res.LateCancels++
		}
	}
	res.Frames, res.AgentRecords = len(ev.Frames), len(ev.Agent)
	for _, f := range ev.Frames {
		if f.Dir == "out" && f.Type == "execution_start" {
			res.Starts++
		}
	}
	ev.MustComplete = recovery
	res.Violations = Check(ev)
	res.Duration = time.Since(start)
	return res
}

// chaosLoop SIGKILLs a random process (Core 40 %, a Runtime 20 % each, an
// agent a Runtime started 20 %) at random moments and starts it (Core or
// the Runtime) again after a random pause, until ctx ends, the
// workload is done or cfg.Kills is reached. It returns the number of kills.
func chaosLoop(ctx context.Context, cfg Config, core *proc, runtimes []*proc, done <-chan struct{}, w *workload, kills map[string]int) (int, error) {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xc4a05))
	n := 0
	for n < cfg.Kills {
		// A kill every 0.3 to 2.5 s: often enough that Turns of every
		// phase (preparation, start, streaming, a question, an input) are
		// hit, with time between for the peers to reconnect.
		pause := time.Duration(300+rng.IntN(2200)) * time.Millisecond
		select {
		case <-ctx.Done():
			return n, nil
		case <-done:
			return n, nil
		case <-time.After(pause):
		}
		r := rng.IntN(10)
		if r >= 8 {
			// An agent dies on its own: its Runtime is still there to
			// report the Turn, which must not be completed (the agent
			// never logged done).
			rt := runtimes[r%2]
			if pid := rt.child(rng); pid > 0 && syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
				kills["agent"]++
				fmt.Fprintf(cfg.Out, "chaos: kill %d: an agent of %s (pid %d) at %d submitted\n", n, rt.name, pid, w.submitted.Load())
			}
			continue
		}
		victim := core
		if r >= 4 {
			victim = runtimes[r%2]
		}
		down := time.Duration(rng.IntN(1500)) * time.Millisecond
		victim.kill()
		n++
		kills[victim.name]++
		fmt.Fprintf(cfg.Out, "chaos: kill %d: %s (generation %d) at %d submitted, down %v\n", n, victim.name, victim.generation(), w.submitted.Load(), down)
		time.Sleep(down) // bounded: at most 1.5 s
		if err := victim.start(); err != nil {
			return n, fmt.Errorf("restart %s after kill %d: %w", victim.name, n, err)
		}
	}
	return n, nil
}

// issue runs agentwire core credential issue and returns the secret it
// printed (empty with --out, which writes it to a file).
func issue(cfg Config, data string, args ...string) (string, error) {
	return issueWith(cfg, append([]string{"--data", data}, args...)...)
}

// issueWith is issue with the store's flags among args.
func issueWith(cfg Config, args ...string) (string, error) {
	cmd := exec.Command(cfg.Bin, append([]string{"core", "credential", "issue"}, args...)...)
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return "", fmt.Errorf("credential issue %v: %w: %s", args, err, exit.Stderr)
	}
	if err != nil {
		return "", fmt.Errorf("credential issue %v: %w", args, err)
	}
	var c struct {
		Secret string `json:"secret"`
	}
	if s := strings.TrimSpace(string(out)); strings.HasPrefix(s, "{") {
		if err := json.Unmarshal([]byte(s), &c); err != nil {
			return "", fmt.Errorf("credential issue %v: %w", args, err)
		}
	}
	return c.Secret, nil
}

func createEnvironment(ctx context.Context, c *client, device string, i int) (string, error) {
	body := map[string]any{"device_id": device, "initialization": map[string]any{
		"env":   map[string]string{"CHAOS_ENV": fmt.Sprint(i)},
		"files": []any{map[string]any{"path": "/workspace/chaos-init.txt", "content": base64.StdEncoding.EncodeToString([]byte("initialized\n"))}},
	}}
	code, v := c.do(ctx, "POST", "/api/v1/environments", body)
	id, _ := v["id"].(string)
	if code != 201 || id == "" {
		return "", fmt.Errorf("create an Environment on %s: %d %v", device, code, v)
	}
	return id, nil
}

func createSession(ctx context.Context, c *client, envID string) (string, error) {
	code, v := c.do(ctx, "POST", "/api/v1/sessions", map[string]any{"agent_kind": "echo", "environment_id": envID})
	id, _ := v["id"].(string)
	if code != 201 || id == "" {
		return "", fmt.Errorf("create a Session on %s: %d %v", envID, code, v)
	}
	return id, nil
}

// Report prints the figures of a run and its violations, each with the
// seed to replay.
func (r Result) Report(out io.Writer, seed uint64) {
	fmt.Fprintf(out, "chaos: seed %d: %d Turns in %v; Core ran %d times\n", seed, r.Turns, r.Duration.Round(time.Second), r.CoreGens)
	states := make([]string, 0, len(r.ByState))
	for s := range r.ByState {
		states = append(states, s)
	}
	sort.Strings(states)
	for _, s := range states {
		fmt.Fprintf(out, "chaos:   %-40s %d\n", s, r.ByState[s])
	}
	fmt.Fprintf(out, "chaos: kills core=%d dev-1=%d dev-2=%d agent=%d, cuts %d; answers %d, inputs %d, cancels %d, writes %d; driver gave up on %d; Sessions replaced %d\n",
		r.Kills["core"], r.Kills["dev-1"], r.Kills["dev-2"], r.Kills["agent"], r.Cuts, r.Answers, r.Inputs, r.Cancels, r.Writes, r.GaveUp, r.Replaced)
	fmt.Fprintf(out, "chaos: checked %d frames of %d Core transcripts (%d execution_start) and %d agent records\n", r.Frames, r.CoreGens, r.Starts, r.AgentRecords)
	if r.Kills["core-0"] > 0 {
		fmt.Fprintf(out, "chaos: replica core-0 SIGKILLed for good; %d of its Turns reconciled by another replica once its leases expired\n", r.ReplicaLost)
	}
	if r.LateCancels > 0 {
		fmt.Fprintf(out, "chaos: %d Turns failed cancel_unconfirmed whose applied cancellation receipt came after Core's 15 s bound\n", r.LateCancels)
	}
	for _, v := range r.Violations {
		fmt.Fprintf(out, "chaos: VIOLATION (seed %d) %s\n", seed, v)
	}
	if len(r.Violations) > 0 {
		fmt.Fprintf(out, "chaos: %d violations; replay with: make chaos SEED=%d\n", len(r.Violations), seed)
	} else {
		fmt.Fprintf(out, "chaos: every property holds\n")
	}
}

// lateApplied reports whether a journal holds an applied cancellation
// receipt that arrived after the Turn was already failed cancel_unconfirmed.
func lateApplied(events []store.Event) bool {
	for _, ev := range events {
		if ev.Type == "late_cancel_receipt" && strings.Contains(string(ev.Payload), `"applied":true`) {
			return true
		}
	}
	return false
}
