package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sync"
	"sync/atomic"
	"time"
)

// sessionRef is a Session of the workload, the project it belongs to and
// its Environment.
type sessionRef struct {
	ID          string
	Project     string
	Environment string
}

// turnRun is what the driver did with one Turn.
type turnRun struct {
	Tag     string // the unique word the Turn's text starts with
	ID      string
	Session string
	Inputs  []string // input IDs submitted (each answered 202 or unanswered)
	// Adopted: the Turn's creation went unanswered and the driver found
	// it in the Session's list afterwards.
	Adopted bool
	GaveUp  bool // the Turn did not end within the driver's budget
}

// workload submits the Turns through the public API: each Session runs
// its share of Turns one after the other, answering the permission
// question, sending an active input and sometimes cancelling or writing a
// file, all decided by the seed. It tolerates Core being down: every
// call is retried with a bounded backoff.
type workload struct {
	seed       uint64
	clients    map[string]*client // by project
	sessions   []sessionRef
	turns      int
	turnBudget time.Duration

	mu       sync.Mutex
	all      []sessionRef // every Session, the replacements too
	runs     []*turnRun
	observed map[string][]string // Turn ID -> terminal states the API reported, in order

	submitted atomic.Int64 // Turns created
	finished  atomic.Int64 // Turns the driver saw end (or gave up on)
	answers   atomic.Int64
	inputs    atomic.Int64
	cancels   atomic.Int64
	writes    atomic.Int64
	replaced  atomic.Int64 // Sessions replaced because they could not continue
}

// plan is what the driver does with one Turn, drawn from the seed.
type plan struct {
	approve  bool
	input    bool
	cancelAt int // cancel after this many events (0: never)
	write    bool
}

// plan draws Turn n's plan from its own stream of the seed, so a Turn's
// plan does not depend on the order the Sessions' goroutines run in.
func (w *workload) plan(n int) plan {
	rng := rand.New(rand.NewPCG(w.seed, uint64(n)+1))
	p := plan{approve: rng.IntN(5) != 0, input: rng.IntN(5) != 0, write: rng.IntN(10) == 0}
	if rng.IntN(12) == 0 {
		p.cancelAt = 1 + rng.IntN(6)
	}
	return p
}

// run drives every Session until its Turns are done or ctx ends.
func (w *workload) run(ctx context.Context) {
	w.all = append(w.all, w.sessions...)
	var wg sync.WaitGroup
	for i, s := range w.sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			completed := false // a Turn of s completed: its native Session ID is recorded
			for n := i; n < w.turns; n += len(w.sessions) {
				if ctx.Err() != nil {
					return
				}
				if w.plan(n).write && !w.write(ctx, s, fmt.Sprintf("t%04d", n)) {
					// A write without a success answer may hold the
					// Session's mutation owner until an operator resolves
					// it (daemon-protocol.txt:185): its Turns would wait
					// session_busy for ever, so the workload moves on.
					s, completed = w.replace(ctx, s), false
				}
				state, reason := w.turn(ctx, s, n)
				switch {
				case state == "completed":
					completed = true
				case reason == "unplaceable" || (state != "" && !completed):
					// Without a recorded native Session ID the Session's
					// next Turn would wait for the placement timeout and
					// fail unplaceable; replacing it at once saves that.
					s, completed = w.replace(ctx, s), false
				}
				w.finished.Add(1)
			}
		}()
	}
	wg.Wait()
}

// replace gives a Session that cannot go on (or may not) a successor on
// the same Environment.
//
// decision: a Session whose started Turn was interrupted before done has
// no native Session ID, and echo-agent does not declare
// native_session_recovery, so its next Turn cannot be placed
// (daemon-protocol.txt:38) and fails unplaceable after Core's placement
// timeout. That is the protocol working, not a fault; the workload moves
// on to a new Session rather than feed the dead one.
func (w *workload) replace(ctx context.Context, old sessionRef) sessionRef {
	c := w.clients[old.Project]
	var id string
	if !retry(ctx, w.turnBudget, func() bool {
		code, v := c.do(ctx, "POST", "/api/v1/sessions", map[string]any{"agent_kind": "echo", "environment_id": old.Environment})
		id, _ = v["id"].(string)
		return code == 201 && id != ""
	}) {
		return old
	}
	// A creation whose answer was lost leaves an unused Session: it has
	// no Turn, so the checker has nothing to check there.
	s := sessionRef{ID: id, Project: old.Project, Environment: old.Environment}
	w.mu.Lock()
	w.all = append(w.all, s)
	w.mu.Unlock()
	w.replaced.Add(1)
	return s
}

// sessionIDs lists every Session the workload used.
func (w *workload) sessionIDs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.all))
	for _, s := range w.all {
		out = append(out, s.ID)
	}
	return out
}

// turn creates Turn n in Session s and follows it to its end; it returns
// the state and failure reason the Turn ended with ("" when the driver did
// not see it end).
func (w *workload) turn(ctx context.Context, s sessionRef, n int) (string, string) {
	p := w.plan(n)
	c := w.clients[s.Project]
	tag := fmt.Sprintf("t%04d", n)
	// echo-agent's default conversation asks its question and, approved,
	// waits for an active input; a Turn the driver sends none to asks
	// and ends (docs/exec-adapter.md, examples/echo-agent).
	text := tag + " echo these few words please"
	if !p.input {
		text = "/echo\n/ask\n" + text
	}
	tr := &turnRun{Tag: tag, Session: s.ID}
	known := w.sessionTurnIDs(s.ID)
	ok := retry(ctx, w.turnBudget, func() bool {
		code, v := c.do(ctx, "POST", "/api/v1/sessions/"+s.ID+"/turns", textInput(text))
		if code == 201 {
			tr.ID, _ = v["id"].(string)
			return true
		}
		if code != 0 {
			return false // refused (Core starting, say): nothing was created
		}
		// No answer: the Turn may exist. The driver runs one Turn of a
		// Session at a time, so a Turn of the Session it does not know
		// is this one.
		var id string
		if !retry(ctx, w.turnBudget, func() bool {
			var answered bool
			id, answered = w.findNew(ctx, c, s.ID, known)
			return answered
		}) {
			return false
		}
		if id != "" {
			tr.ID, tr.Adopted = id, true
			return true
		}
		return false // not created: submit it again
	})
	if !ok {
		return "", ""
	}
	w.submitted.Add(1)
	w.mu.Lock()
	w.runs = append(w.runs, tr)
	w.mu.Unlock()
	return w.follow(ctx, c, tr, p)
}

// follow reads the Turn's event stream (resuming after the last event
// across Core restarts), answers its question, sends its input and
// cancels it when the plan says so, until the stream reports a terminal
// status or the budget ends. It returns the state and failure reason the
// Turn ended with.
func (w *workload) follow(ctx context.Context, c *client, tr *turnRun, p plan) (string, string) {
	deadline := time.Now().Add(w.turnBudget)
	var after int64
	state, reason := "", ""
	events, ended := 0, false
	answered := map[string]bool{}
	sent, cancelled := false, false
	wait := 50 * time.Millisecond
	for !ended && time.Now().Before(deadline) && ctx.Err() == nil {
		sctx, cancel := context.WithDeadline(ctx, deadline)
		after = c.stream(sctx, tr.ID, after, func(ev sseEvent) bool {
			events++
			switch ev.Type {
			case "permission_request":
				var q struct {
					InteractionID string `json:"interaction_id"`
				}
				_ = json.Unmarshal([]byte(ev.Data), &q)
				if q.InteractionID != "" && !answered[q.InteractionID] {
					answered[q.InteractionID] = true
					w.answer(sctx, c, tr.ID, q.InteractionID, p.approve)
				}
			case "status":
				var st struct {
					State  string `json:"state"`
					Reason string `json:"reason"`
				}
				_ = json.Unmarshal([]byte(ev.Data), &st)
				w.observe(tr.ID, st.State)
				state, reason = st.State, st.Reason
				ended = true
				return false
			case "end", "error":
				return false
			}
			if p.input && !sent && (ev.Type == "delta" || ev.Type == "permission_request") {
				sent = true
				tr.Inputs = append(tr.Inputs, w.input(sctx, c, tr))
			}
			if p.cancelAt > 0 && !cancelled && events >= p.cancelAt {
				cancelled = true
				w.cancel(sctx, c, tr.ID)
			}
			return true
		})
		cancel()
		if !ended {
			// The stream was cut (Core is down, or restarting): ask for
			// the state, then reopen it after a pause.
			if st, why := w.state(ctx, c, tr.ID); st != "" {
				w.observe(tr.ID, st)
				if terminal(st) {
					ended, state, reason = true, st, why
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
			wait = min(2*wait, 2*time.Second)
		}
	}
	tr.GaveUp = !ended
	return state, reason
}

func (w *workload) answer(ctx context.Context, c *client, turnID, interactionID string, approve bool) {
	retry(ctx, 20*time.Second, func() bool {
		code, _ := c.do(ctx, "POST", "/api/v1/turns/"+turnID+"/interactions/"+interactionID, map[string]any{"approved": approve})
		return code != 0 && code != 503 // answered, or refused for good (the Turn ended)
	})
	w.answers.Add(1)
}

// input sends the Turn's one active input; a retry after no answer uses
// the same input ID, so Core stores it at most once (409 input_conflict).
func (w *workload) input(ctx context.Context, c *client, tr *turnRun) string {
	id := tr.Tag + "-in1"
	body := map[string]any{"input_id": id, "input": textInput(id + " steer this way")["input"]}
	retry(ctx, 20*time.Second, func() bool {
		code, _ := c.do(ctx, "POST", "/api/v1/turns/"+tr.ID+"/input", body)
		return code != 0 && code != 503
	})
	w.inputs.Add(1)
	return id
}

func (w *workload) cancel(ctx context.Context, c *client, turnID string) {
	retry(ctx, 20*time.Second, func() bool {
		code, _ := c.do(ctx, "POST", "/api/v1/turns/"+turnID+"/cancel", nil)
		return code != 0 && code != 503
	})
	w.cancels.Add(1)
}

// write puts one small file into the Session's workspace before a Turn:
// a workspace mutation crossing the same cut connections. It is sent
// once; an unanswered write is not retried (its outcome is unknown). It
// reports whether Core answered with success.
func (w *workload) write(ctx context.Context, s sessionRef, tag string) bool {
	req := "/api/v1/sessions/" + s.ID + "/files/content?path=chaos/" + tag + ".txt"
	code := w.clients[s.Project].doRaw(ctx, "PUT", req, []byte("written before "+tag+"\n"))
	w.writes.Add(1)
	return code >= 200 && code < 300
}

// state is the Turn's public state and failure reason ("" when Core did
// not answer).
func (w *workload) state(ctx context.Context, c *client, turnID string) (string, string) {
	code, v := c.do(ctx, "GET", "/api/v1/turns/"+turnID, nil)
	if code != 200 {
		return "", ""
	}
	st, _ := v["status"].(map[string]any)
	s, _ := st["state"].(string)
	r, _ := st["reason"].(string)
	return s, r
}

// observe records a terminal state the API reported for the Turn.
func (w *workload) observe(turnID, state string) {
	if !terminal(state) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.observed[turnID] = append(w.observed[turnID], state)
}

func terminal(state string) bool {
	return state == "completed" || state == "failed" || state == "cancelled"
}

// sessionTurnIDs lists the IDs of the Turns the driver created in s.
func (w *workload) sessionTurnIDs(sessionID string) map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]bool{}
	for _, r := range w.runs {
		if r.Session == sessionID {
			out[r.ID] = true
		}
	}
	return out
}

// findNew returns the ID of a Turn of the Session that is not in known
// ("" when there is none) and whether Core answered.
func (w *workload) findNew(ctx context.Context, c *client, sessionID string, known map[string]bool) (string, bool) {
	code, v := c.do(ctx, "GET", "/api/v1/sessions/"+sessionID+"/turns?limit=100", nil)
	if code != 200 {
		return "", false
	}
	list, _ := v["turns"].([]any)
	for _, x := range list {
		t, _ := x.(map[string]any)
		if id, _ := t["id"].(string); id != "" && !known[id] {
			return id, true
		}
	}
	return "", true
}

// finalStates asks for the state of every Turn once more after the
// chaos, waiting (within ctx) for each to end, so a state that changed
// after the driver saw it is observed too.
func (w *workload) finalStates(ctx context.Context) {
	w.mu.Lock()
	runs := append([]*turnRun(nil), w.runs...)
	w.mu.Unlock()
	for _, r := range runs {
		c := w.clientOf(r.Session)
		var st string
		retry(ctx, time.Minute, func() bool { st, _ = w.state(ctx, c, r.ID); return terminal(st) })
		w.observe(r.ID, st)
	}
}

func (w *workload) clientOf(sessionID string) *client {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.all {
		if s.ID == sessionID {
			return w.clients[s.Project]
		}
	}
	return nil
}

func textInput(s string) map[string]any {
	return map[string]any{"input": []any{map[string]any{"content": []any{map[string]any{"type": "input_text", "text": s}}}}}
}

// tagPattern is a Turn's tag: t and four digits, a word of its own (an
// input's ID, t0001-in1, is not one).
var tagPattern = regexp.MustCompile(`(?:^|\s)(t\d{4})(?:\s|$)`)

// tagOf is the tag in a Turn's text ("" when there is none).
func tagOf(text string) string {
	if m := tagPattern.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return ""
}

// recover runs one Turn on a new Session of each Environment once the
// faults are over, approved and with its input: with every process up and
// no connection cut, each must complete. It returns their Turn IDs.
func (w *workload) recover(ctx context.Context, n int) []string {
	envs := map[string]sessionRef{}
	for _, s := range w.sessions {
		envs[s.Environment] = s
	}
	var (
		mu  sync.Mutex
		ids []string
		wg  sync.WaitGroup
	)
	for _, s := range envs {
		tag := n
		n++
		wg.Add(1)
		go func() {
			defer wg.Done()
			fresh := w.replace(ctx, s)
			if fresh.ID == s.ID {
				return // no new Session: the Turn below would prove nothing
			}
			w.replaced.Add(-1) // not a replacement: a recovery Session
			c := w.clients[s.Project]
			tr := &turnRun{Tag: fmt.Sprintf("t%04d", tag), Session: fresh.ID}
			if !retry(ctx, w.turnBudget, func() bool {
				code, v := c.do(ctx, "POST", "/api/v1/sessions/"+fresh.ID+"/turns", textInput(tr.Tag+" echo these few words please"))
				tr.ID, _ = v["id"].(string)
				return code == 201 && tr.ID != ""
			}) {
				return
			}
			w.mu.Lock()
			w.runs = append(w.runs, tr)
			w.mu.Unlock()
			mu.Lock()
			ids = append(ids, tr.ID)
			mu.Unlock()
			w.follow(ctx, c, tr, plan{approve: true, input: true})
		}()
	}
	wg.Wait()
	if len(ids) < len(envs) {
		// A recovery Turn that could not even be created is a failure to
		// recover too; an empty ID makes the checker say so.
		for range len(envs) - len(ids) {
			ids = append(ids, "")
		}
	}
	return ids
}
