// Package modelcheck explores Core and the Runtime together: both roles of
// the real generated machines, each behind a real peer.Driver, connected by
// a channel model, with native work reduced to choices and time to a fake
// clock. It walks the reachable composed states breadth-first up to bounds,
// checks the invariants declared in spec/invariants.yaml on every state,
// and reports each violation as the shortest trace that reaches it
// (rendered as a Mermaid sequence diagram and as a peer/scenario file).
//
// The explorer chooses every step: Core's requests (within the bounds on
// Runs and inputs), every frame the Runtime's table lets it send, every
// local event a peer may observe (native outcomes), the delivery of the
// oldest in-flight frame of either direction (WebSocket keeps one
// direction's order; the two directions interleave freely), the next timer
// deadline, a failed write (the frame lost, or arriving anyway) and a lost
// connection followed by a fresh one. A sender's own driver filters its
// sends, so each peer does exactly what its table lets it do.
package modelcheck

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/spec"
	"github.com/agentwire/agentwire/wire"
)

// Bounds limit the exploration.
type Bounds struct {
	Depth      int // actions in a trace
	Runs       int // preparations (and their Runs) Core begins, over all connections
	Inputs     int // active inputs per Run
	Faults     int // failed writes and dropped connections
	Reconnects int // fresh connections after the first
	Revisions  int // preparation_status revisions per handle
	InFlight   int // frames in flight per direction (2 when 0)
	Writes     int // workspace writes Core begins, over all connections
	Reads      int // workspace reads Core dispatches, over all connections (with the workspace_read machine)
	Exports    int // workspace exports Core begins, over all connections (with the workspace_export machine)
	Asks       int // permission requests the Runtime raises per Run (with the interaction machine)
	// Suspensions is how many suspension attempts Core begins, over all
	// connections (with the suspension machine; 1 when 0).
	Suspensions int
	ReadOnly    bool // Core may also prepare the read-only workspace profile
	MaxStates   int  // stop after this many distinct states (0: no limit)
}

// CI is the bound `make model-check` runs (about 350 000 states, 75 s of
// one core, 1.2 GB; BENCHMARKS.md).
var CI = Bounds{Depth: 14, Runs: 1, Inputs: 1, Faults: 1, Reconnects: 1, Revisions: 4, ReadOnly: true, MaxStates: 1_000_000}

// Long is the bound `make model-check-long` runs: two inputs, two faults,
// deeper traces, stopped at 1.5 million states (about 5 GB).
var Long = Bounds{Depth: 16, Runs: 1, Inputs: 2, Faults: 2, Reconnects: 2, Revisions: 5, ReadOnly: true, MaxStates: 1_500_000}

// Config is one exploration.
type Config struct {
	Model    *spec.Model
	Machines []string // the composition; every machine of Model when empty
	Bounds   Bounds
	// Sync delivers every frame as it is written, as peer/scenario does, so
	// that a counterexample replays there exactly; a failed write then
	// drops the connection at once.
	Sync bool
	// Invariants restricts the check to these names (all when empty).
	Invariants []string
	// StopAtFirst ends the exploration at the first violation found while
	// exploring (the livelock search, which needs the whole graph, is then
	// skipped unless nothing else was found).
	StopAtFirst bool
	// Progress, when set, is called every 50 000 states.
	Progress func(states, depth int)
}

// Violation is an invariant that failed, with the shortest trace to it.
type Violation struct {
	Invariant string
	Kind      spec.InvariantKind
	Pos       spec.Pos
	Msg       string
	Trace     []Action
}

func (v *Violation) Error() string {
	return fmt.Sprintf("invariant %s (%s) violated after %d steps: %s", v.Invariant, v.Pos, len(v.Trace), v.Msg)
}

// Report is what an exploration found.
type Report struct {
	States      int
	Transitions int
	Depth       int // the deepest level explored
	Frontier    int // states left unexpanded at the depth bound
	Truncated   bool
	Elapsed     time.Duration
	Violations  []*Violation
	Bounds      Bounds
	Machines    []string
}

// StatesPerSecond is the exploration rate.
func (r *Report) StatesPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.States) / r.Elapsed.Seconds()
}

type resAct struct {
	index   int
	acquire bool
}

type model struct {
	cfg       Config
	tables    []*fsm.Table
	byName    map[string]*fsm.Table
	router    peer.Router
	invs      []*spec.Invariant
	resources map[string]map[string]resAct // machine → action → resource
	kept      map[string][]bool            // machine → resource index → kept_when_unknown
	resNames  map[string][]string
	excluded  map[string]map[string]bool // machine → local events the explorer never chooses
	decoded   map[string]*wire.Message
	// turn is the follows invariant of Core's turn machine, when the
	// composition includes it (turn.go); nil otherwise.
	turn *spec.Invariant
}

func newModel(cfg Config) (*model, error) {
	if cfg.Model == nil {
		return nil, errors.New("modelcheck: no spec model")
	}
	m := &model{cfg: cfg, byName: map[string]*fsm.Table{}, resources: map[string]map[string]resAct{},
		kept: map[string][]bool{}, resNames: map[string][]string{}, excluded: map[string]map[string]bool{}, decoded: map[string]*wire.Message{}}
	want := map[string]bool{}
	for _, n := range cfg.Machines {
		want[n] = true
	}
	missing := map[string]bool{}
	for n := range want {
		missing[n] = true
	}
	for _, mc := range cfg.Model.Machines {
		if len(want) > 0 && !want[mc.Name] {
			continue
		}
		delete(missing, mc.Name)
		if mc.Name == turnMachine {
			// Core's own machine: no driver runs it (turn.go).
			if m.turn = turnInvariant(cfg.Model.Invariants); m.turn == nil {
				return nil, errors.New("modelcheck: the turn machine needs a follows invariant in the spec")
			}
			continue
		}
		if mc.Peers != fsm.RoleBoth {
			continue // another peer's own machine: nothing composes it
		}
		t, err := mc.Table()
		if err != nil {
			return nil, err
		}
		m.tables = append(m.tables, t)
		m.byName[t.Name] = t
		acts := map[string]resAct{}
		for i, r := range mc.Resources {
			m.kept[mc.Name] = append(m.kept[mc.Name], r.KeptWhenUnknown)
			m.resNames[mc.Name] = append(m.resNames[mc.Name], r.Name)
			for _, a := range mc.Actions {
				if a.Acquires == r {
					acts[a.Name] = resAct{i, true}
				}
				if a.Releases == r {
					acts[a.Name] = resAct{i, false}
				}
			}
		}
		m.resources[mc.Name] = acts
		ex := map[string]bool{"connection_lost": true}
		for _, e := range t.Events {
			if e.FailedSend != 0 {
				ex[t.EventName(e.FailedSend)] = true
			}
		}
		if t.Name == "input" {
			ex["run_settled"] = true // Core's app fires it when the Run settles (app.runSettled)
		}
		if t.Name == "interaction" {
			ex["run_closed"] = true // both apps fire it when the Run settles or the connection goes (world.closeInteractions)
		}
		if t.Name == "connection" {
			// The connection's own lifecycle (bootstrap, shutdown) is the
			// spec checks' business; here it only carries the others.
			for _, e := range t.Events {
				if e.Kind == fsm.EventLocal {
					ex[e.Name] = true
				}
			}
		}
		m.excluded[t.Name] = ex
	}
	for n := range missing {
		return nil, fmt.Errorf("modelcheck: no machine %q in the spec", n)
	}
	router, err := peer.CatalogRouter(m.tables)
	if err != nil {
		return nil, err
	}
	m.router = router
	only := map[string]bool{}
	for _, n := range cfg.Invariants {
		only[n] = true
	}
	unknown := map[string]bool{}
	for n := range only {
		unknown[n] = true
	}
	for _, inv := range cfg.Model.Invariants {
		if len(only) > 0 && !only[inv.Name] {
			continue
		}
		delete(unknown, inv.Name)
		m.invs = append(m.invs, inv)
	}
	for n := range unknown {
		return nil, fmt.Errorf("modelcheck: no invariant %q in the spec", n)
	}
	return m, nil
}

// node is one explored state: how it was reached, and where it leads.
type node struct {
	parent int32
	depth  int32
	act    Action
	succ   []int32
	// expanded is false for states left at the depth or state bound.
	expanded bool
	settled  bool
}

// Check explores cfg and reports what it found.
func Check(cfg Config) (*Report, error) {
	start := time.Now()
	m, err := newModel(cfg)
	if err != nil {
		return nil, err
	}
	root, err := m.initial()
	if err != nil {
		return nil, err
	}
	rep := &Report{Bounds: cfg.Bounds}
	for _, t := range m.tables {
		rep.Machines = append(rep.Machines, t.Name)
	}
	if m.turnOn() {
		rep.Machines = append(rep.Machines, turnMachine+" (Core's own)")
	}
	nodes := []node{{parent: -1}}
	seen := map[[16]byte]int32{root.hash(): 0}
	found := map[string]bool{}
	report := func(v *Violation, at int32, last *Action) {
		if found[v.Invariant] {
			return
		}
		found[v.Invariant] = true
		v.Trace = pathTo(nodes, at)
		if last != nil {
			v.Trace = append(v.Trace, *last)
		}
		rep.Violations = append(rep.Violations, v)
	}
	if v := root.checkState(); v != nil {
		report(v, 0, nil)
	}
	nodes[0].settled = root.settled()
	root.freeze()
	queue := []*world{root}
	ids := []int32{0}
	for len(queue) > 0 {
		if cfg.StopAtFirst && len(rep.Violations) > 0 {
			break
		}
		w, id := queue[0], ids[0]
		queue[0], queue, ids = nil, queue[1:], ids[1:]
		n := &nodes[id]
		if cfg.Bounds.MaxStates > 0 && len(nodes) >= cfg.Bounds.MaxStates {
			rep.Frontier++
			rep.Truncated = true
			continue
		}
		w.thaw()
		n.expanded = true
		self := w.hash()
		moves := 0
		violating := false
		enabled := map[string]bool{}
		for _, a := range w.candidates() {
			if a.Kind == ActSend {
				k := a.Role.String() + a.Type + a.ID + a.Payload
				ok, known := enabled[k]
				if !known {
					ok = w.canSend(&a)
					enabled[k] = ok
				}
				if !ok {
					continue
				}
			}
			c := w.fork()
			if !c.apply(&a) {
				continue
			}
			h := c.hash()
			if h == self {
				continue
			}
			rep.Transitions++
			if a.Fault == FaultNone && (a.Kind != ActReconnect || w.broken) {
				moves++ // a fault is not a way forward; the reconnect after one is
			}
			if c.viol == nil {
				c.viol = c.checkState()
			}
			if c.viol != nil {
				report(c.viol, id, &a)
				// The violating successor is not explored; what it leads to
				// stays open, so this state is not blamed for a livelock.
				violating = true
				continue
			}
			if old, ok := seen[h]; ok {
				nodes[id].succ = append(nodes[id].succ, old)
				continue
			}
			nid := int32(len(nodes))
			nodes = append(nodes, node{parent: id, depth: nodes[id].depth + 1, act: a, settled: c.settled()})
			nodes[id].succ = append(nodes[id].succ, nid)
			seen[h] = nid
			if d := int(nodes[nid].depth); d > rep.Depth {
				rep.Depth = d
			}
			if int(nodes[nid].depth) >= cfg.Bounds.Depth {
				rep.Frontier++ // left at the bound: never expanded, so never kept
			} else {
				c.freeze()
				queue = append(queue, c)
				ids = append(ids, nid)
			}
			if cfg.Progress != nil && len(nodes)%50_000 == 0 {
				cfg.Progress(len(nodes), int(nodes[nid].depth))
			}
		}
		if w.capped || violating {
			// The revision bound cut this state's choices: whether it can
			// settle stays open, as at the depth bound.
			nodes[id].expanded = false
			continue
		}
		if moves == 0 && !nodes[id].settled {
			if inv := m.inv(spec.KindSettles); inv != nil {
				report(&Violation{Invariant: inv.Name, Kind: inv.Kind, Pos: inv.Pos,
					Msg: "stuck: neither side can move and no timer is armed, yet " + w.unsettled()}, id, nil)
			}
		}
	}
	rep.States = len(nodes)
	if inv := m.inv(spec.KindSettles); inv != nil && !(cfg.StopAtFirst && len(rep.Violations) > 0) {
		if at := livelock(nodes); at >= 0 {
			root := m.replay(pathTo(nodes, at))
			report(&Violation{Invariant: inv.Name, Kind: inv.Kind, Pos: inv.Pos,
				Msg: "no settled state can be reached from here, whatever either side does: " + root.unsettled()}, at, nil)
		}
	}
	sort.Slice(rep.Violations, func(i, j int) bool {
		if len(rep.Violations[i].Trace) != len(rep.Violations[j].Trace) {
			return len(rep.Violations[i].Trace) < len(rep.Violations[j].Trace)
		}
		return rep.Violations[i].Invariant < rep.Violations[j].Invariant
	})
	rep.Elapsed = time.Since(start)
	return rep, nil
}

func pathTo(nodes []node, at int32) []Action {
	var out []Action
	for i := at; i > 0; i = nodes[i].parent {
		out = append(out, nodes[i].act)
	}
	for l, r := 0, len(out)-1; l < r; l, r = l+1, r-1 {
		out[l], out[r] = out[r], out[l]
	}
	return out
}

// livelock finds the shallowest expanded state from which neither a
// settled state nor an unexpanded one (beyond the bound, where the
// question stays open) can be reached; -1 when there is none.
func livelock(nodes []node) int32 {
	pred := make([][]int32, len(nodes))
	good := make([]bool, len(nodes))
	var work []int32
	for i := range nodes {
		for _, s := range nodes[i].succ {
			pred[s] = append(pred[s], int32(i))
		}
		if nodes[i].settled || !nodes[i].expanded {
			good[i] = true
			work = append(work, int32(i))
		}
	}
	for len(work) > 0 {
		n := work[len(work)-1]
		work = work[:len(work)-1]
		for _, p := range pred[n] {
			if !good[p] {
				good[p] = true
				work = append(work, p)
			}
		}
	}
	best := int32(-1)
	for i := range nodes {
		if !good[i] && (best < 0 || nodes[i].depth < nodes[best].depth) {
			best = int32(i)
		}
	}
	return best
}

// replay rebuilds the world a trace reaches.
func (m *model) replay(trace []Action) *world {
	w, err := m.initial()
	if err != nil {
		panic(err)
	}
	for i := range trace {
		w.apply(&trace[i])
	}
	return w
}

func (m *model) inv(k spec.InvariantKind) *spec.Invariant {
	for _, inv := range m.invs {
		if inv.Kind == k {
			return inv
		}
	}
	return nil
}
