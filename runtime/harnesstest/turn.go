package harnesstest

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// Result is what one Turn showed through the harness interfaces.
type Result struct {
	Scenario *Scenario
	// RunID is the Turn's Run ID.
	RunID string
	// Prepared is NewExecutor's error; the Turn did not run when it is set.
	Prepared error
	// Events are the frames the Turn emitted, in order; Late the ones it
	// emitted after Run returned (a contract violation).
	Events []wire.Payload
	Late   []wire.Payload
	// Done and Err are what Run returned.
	Done wire.Done
	Err  error
	// Returned is false when Run did not return within the timeout.
	Returned bool
	// Cancelled is true when the kit cancelled the Turn.
	Cancelled bool
	// Answers, Steers and Notices are the kit's answers and active inputs
	// with what the Executor returned, and the input notices it reported.
	Answers []Answered
	Steers  []Steered
	Notices []harness.InputNotice
	// nativeAtRun is Config.NativeCalls once the Executor was prepared,
	// before Run (-1 without a counter): what the Turn's input started
	// natively is counted from there.
	nativeAtRun int
}

// Answered is one answer the kit gave.
type Answered struct {
	Answer harness.Answer
	Err    error
}

// Steered is one active input the kit wrote.
type Steered struct {
	InputID string
	Input   wire.MessageInput
	Err     error
	// NativeCalls is how many native operations the write started (-1
	// without Config.NativeCalls).
	NativeCalls int
}

// Text is the deltas joined.
func (r *Result) Text() string {
	var b strings.Builder
	for _, e := range r.Events {
		if d, ok := e.(wire.Delta); ok {
			b.WriteString(d.Delta)
		}
	}
	return b.String()
}

// Output is what a reader of the Turn sees as its answer: the deltas
// joined, or done's content when nothing streamed.
func (r *Result) Output() string {
	if t := r.Text(); t != "" {
		return t
	}
	return r.Done.Content
}

// Errors are the Turn's error frames.
func (r *Result) Errors() []wire.ErrorFrame {
	var out []wire.ErrorFrame
	for _, e := range r.Events {
		if f, ok := e.(wire.ErrorFrame); ok {
			out = append(out, f)
		}
	}
	return out
}

// Failed reports whether the Turn failed: its preparation or Run returned
// an error, or it emitted an error frame.
func (r *Result) Failed() bool {
	return r.Prepared != nil || r.Err != nil || len(r.Errors()) > 0
}

// OfType returns the events of T, in order.
func OfType[T wire.Payload](r *Result) []T {
	var out []T
	for _, e := range r.Events {
		if v, ok := e.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// drive says how the kit drives a Turn besides answering its questions.
type drive struct {
	// steer is written once, after the Turn's first event.
	steer wire.MessageInput
	// cancelAt cancels the Turn once the deltas joined end with it ("":
	// never by text); cancelOnAsk cancels it when a question arrives.
	cancelAt    string
	cancelOnAsk bool
	// emitFails makes every emit fail: the connection is gone.
	emitFails bool
	// answer is the kit's answer to a question (false: none).
	answer func(q wire.Payload) (harness.Answer, bool)
	// cancelAfterAnswer cancels the Turn once the kit answered a question.
	cancelAfterAnswer bool
	// keep leaves the Executor open for another Turn.
	keep bool
}

// recorder is the emit side of one Turn.
type recorder struct {
	mu       sync.Mutex
	events   []wire.Payload
	late     []wire.Payload
	returned bool
	notices  []harness.InputNotice
	wake     chan struct{}
	fail     bool
}

func (rec *recorder) emit(_ context.Context, p wire.Payload) error {
	rec.mu.Lock()
	if rec.returned {
		rec.late = append(rec.late, p)
	} else {
		rec.events = append(rec.events, p)
	}
	fail := rec.fail
	rec.mu.Unlock()
	select {
	case rec.wake <- struct{}{}:
	default:
	}
	if fail {
		return errConnectionGone
	}
	return nil
}

var errConnectionGone = errors.New("harnesstest: the connection is gone")

func (rec *recorder) notify(n harness.InputNotice) {
	rec.mu.Lock()
	rec.notices = append(rec.notices, n)
	rec.mu.Unlock()
	select {
	case rec.wake <- struct{}{}:
	default:
	}
}

func (rec *recorder) since(n int) []wire.Payload {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]wire.Payload(nil), rec.events[n:]...)
}

// turn runs one Turn of s on exe (nil: a new Executor of s.Config) and
// returns what it showed and the Executor (open when d.keep).
func (k *kit) turn(s *Scenario, exe harness.Executor, d drive) (*Result, harness.Executor) {
	r := &Result{Scenario: s}
	ctx, cancel := context.WithTimeout(context.Background(), k.timeout)
	defer cancel()
	if exe == nil {
		var err error
		exe, err = k.cfg.Adapter.NewExecutor(ctx, harness.ExecutorConfig{SessionID: s.SessionID, Configuration: s.Config,
			Declaration: k.decl, WorkspaceDir: s.WorkspaceDir})
		if err != nil {
			r.Prepared, r.Returned = err, true
			if exe != nil {
				// A failed factory may hand back what it started, when its
				// own cleanup was not confirmed (daemon-protocol.txt:177):
				// the kit keeps both values and closes it, as the daemon's
				// settle_cleanup does, so no native process outlives the
				// scenario unseen.
				k.closeExecutor(exe)
			}
			return r, nil
		}
	}
	r.nativeAtRun = k.nativeCalls()
	rec := &recorder{wake: make(chan struct{}, 1), fail: d.emitFails}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	runID := k.newID("run")
	r.RunID = runID
	type ran struct {
		done wire.Done
		err  error
	}
	res := make(chan ran, 1)
	go func() {
		done, err := exe.Run(runCtx, harness.Turn{RunID: runID, Input: s.Input, Declaration: k.decl, Notify: rec.notify}, rec.emit)
		rec.mu.Lock()
		rec.returned = true
		rec.mu.Unlock()
		res <- ran{done, err}
	}()
	seen, steered := 0, false
	var text strings.Builder
	react := func() {
		for _, e := range rec.since(seen) {
			seen++
			if d.steer != nil && !steered {
				// The Turn runs natively once it emitted something.
				steered = true
				in := Steered{InputID: k.newID("input"), Input: d.steer}
				before := k.nativeCalls()
				if st, ok := exe.(harness.Steerer); ok {
					in.Err = st.Steer(ctx, runID, in.InputID, d.steer)
				} else {
					in.Err = harness.ErrUnsupportedOperation
				}
				in.NativeCalls = -1
				if before >= 0 {
					in.NativeCalls = k.nativeCalls() - before
				}
				r.Steers = append(r.Steers, in)
			}
			if dl, ok := e.(wire.Delta); ok {
				text.WriteString(dl.Delta)
				if d.cancelAt != "" && strings.HasSuffix(text.String(), d.cancelAt) && !r.Cancelled {
					r.Cancelled = true
					stop()
				}
			}
			if !isQuestion(e) {
				continue
			}
			k.asked(e)
			if d.cancelOnAsk && !r.Cancelled {
				r.Cancelled = true
				stop()
				continue
			}
			if d.answer == nil {
				continue
			}
			a, ok := d.answer(e)
			if !ok {
				continue
			}
			ans := Answered{Answer: a}
			if dec, ok := exe.(harness.Decider); ok {
				ans.Err = dec.Decide(ctx, runID, a)
			} else {
				ans.Err = harness.ErrUnsupportedOperation
			}
			r.Answers = append(r.Answers, ans)
			if d.cancelAfterAnswer && !r.Cancelled {
				r.Cancelled = true
				stop()
			}
		}
	}
	for !r.Returned {
		select {
		case <-rec.wake:
			react()
		case out := <-res:
			react()
			r.Done, r.Err, r.Returned = out.done, out.err, true
		case <-ctx.Done():
			// The adapter did not settle: the Turn is reported as not
			// returned, and its Executor is left to the adapter.
			rec.mu.Lock()
			r.Events = append([]wire.Payload(nil), rec.events...)
			rec.mu.Unlock()
			return r, nil
		}
	}
	rec.mu.Lock()
	r.Events, r.Notices = append([]wire.Payload(nil), rec.events...), append([]harness.InputNotice(nil), rec.notices...)
	rec.mu.Unlock()
	// What the Turn emits after Run returned is a violation; the kit
	// looks once more after it settled its own side.
	k.collect(r)
	if d.keep {
		r.Late = rec.lateNow()
		return r, exe
	}
	k.closeExecutor(exe)
	r.Late = rec.lateNow()
	return r, nil
}

// closeExecutor closes an Executor the kit owns, within its timeout; a
// close that fails is recorded for the harness level to report.
func (k *kit) closeExecutor(exe harness.Executor) {
	ctx, cancel := context.WithTimeout(context.Background(), k.timeout)
	defer cancel()
	if err := exe.Close(ctx); err != nil {
		k.mu.Lock()
		k.closeErrs = append(k.closeErrs, err)
		k.mu.Unlock()
	}
}

func (rec *recorder) lateNow() []wire.Payload {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]wire.Payload(nil), rec.late...)
}

func isQuestion(p wire.Payload) bool {
	switch p.(type) {
	case wire.PermissionRequest, wire.PromptForUserChoice, wire.FunctionCall:
		return true
	}
	return false
}

// answerPlan answers each question as the plan's step for it says: the
// n-th question the n-th asking step.
func answerPlan(p Plan) func(q wire.Payload) (harness.Answer, bool) {
	var steps []Step
	for _, s := range p {
		if s.Ask != nil || s.Choice != nil || s.Call != nil || s.MCP != nil {
			steps = append(steps, s)
		}
	}
	n := 0
	return func(q wire.Payload) (harness.Answer, bool) {
		if n >= len(steps) {
			return harness.Answer{}, false
		}
		s := steps[n]
		n++
		switch v := q.(type) {
		case wire.PermissionRequest:
			if s.Ask == nil && s.MCP == nil {
				return harness.Answer{}, false
			}
			// An MCP tool is approved, even one outside allowed_tools:
			// no decision of Core's may make that one run.
			approved := s.MCP != nil || s.Ask.Approve
			return harness.Answer{InteractionID: v.RequestID, Permission: &wire.PermissionDecision{DeliveryID: "kit-decision", Approved: &approved}}, true
		case wire.PromptForUserChoice:
			if s.Choice == nil {
				return harness.Answer{}, false
			}
			dec := &wire.PromptForUserChoiceDecision{DeliveryID: "kit-choice"}
			for _, qq := range v.Questions {
				if ans, ok := s.Choice.Answers[qq.ID]; ok {
					dec.QuestionAnswers = append(dec.QuestionAnswers, wire.UserChoiceAnswer{QuestionID: qq.ID, Answers: ans})
				}
			}
			return harness.Answer{InteractionID: v.AskID, Choice: dec}, true
		case wire.FunctionCall:
			if s.Call == nil {
				return harness.Answer{}, false
			}
			yes := true
			return harness.Answer{InteractionID: v.CallID, Result: &wire.FunctionResult{DeliveryID: "kit-result", CallID: v.CallID, Success: &yes, Content: s.Call.Result}}, true
		}
		return harness.Answer{}, false
	}
}

// deadline is now plus the kit's timeout, for waits outside a Turn.
func (k *kit) deadline() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), k.timeout)
}
