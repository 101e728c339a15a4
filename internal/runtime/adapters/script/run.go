package script

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// turnState is what Steer and Decide reach of the running Turn.
type turnState struct {
	script  Script
	runID   string
	decl    wire.AgentKindCapabilities // the Turn's declaration snapshot
	notify  harness.Notify
	inputs  chan string                    // texts of written inputs
	waiting map[string]chan harness.Answer // open questions, by interaction ID
}

func (e *executor) running(runID string) *turnState {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.turn == nil || e.turn.runID != runID {
		return nil
	}
	return e.turn
}

// ErrWrite is the part-way write failure of InputFail.
var ErrWrite = errors.New("script: native write of the input failed")

// Steer writes active input into the running Turn as the script's Input
// mode says. An accepted input is reported before the Turn sees it, so the
// receipt never races the Turn's next frame. Input the Turn's declaration
// does not take (an image) is refused before anything is written.
func (e *executor) Steer(ctx context.Context, runID, inputID string, in wire.MessageInput) error {
	t := e.running(runID)
	if t == nil {
		return harness.ErrRunInactive
	}
	if err := harness.CheckSteer(t.decl, in); err != nil {
		return err
	}
	switch t.script.Input {
	case InputHang:
		<-ctx.Done()
		return ctx.Err()
	case InputFail:
		return ErrWrite
	case "", InputAccept:
		if t.notify != nil {
			t.notify(harness.InputNotice{InputID: inputID, Accepted: true})
		}
	}
	select {
	case t.inputs <- in.Text():
	default: // the Turn takes at most a few; a full buffer drops the text only
	}
	return nil
}

// Decide answers an open question of the running Turn; a question the Turn
// does not (or no longer) wait for is not pending, and an answer the
// Turn's declaration does not take is refused.
func (e *executor) Decide(ctx context.Context, runID string, a harness.Answer) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.turn == nil || e.turn.runID != runID {
		return harness.ErrRunInactive
	}
	if err := harness.CheckAnswer(e.turn.decl, a); err != nil {
		return err
	}
	ch, ok := e.turn.waiting[a.InteractionID]
	if !ok {
		return harness.ErrRunInactive
	}
	delete(e.turn.waiting, a.InteractionID)
	ch <- a
	return nil
}

func answerText(a harness.Answer) string {
	switch {
	case a.Permission != nil:
		if a.Permission.Approved != nil && *a.Permission.Approved {
			return "allowed"
		}
		return "denied"
	case a.Choice != nil:
		if a.Choice.Cancelled {
			return "cancelled"
		}
		var out string
		for _, q := range a.Choice.QuestionAnswers {
			for _, ans := range q.Answers {
				out += ans
			}
		}
		return out
	case a.Result != nil:
		var out string
		for _, c := range a.Result.Content {
			out += c.Text
		}
		return out
	}
	return ""
}

// answered is what an answered question says: it is streamed like any
// other text, so the deltas joined stay done's content.
func answered(err error, id string, a harness.Answer) string {
	if err != nil {
		return ""
	}
	return "[" + id + ":" + answerText(a) + "]"
}

// ask registers id as an open question, emits q and waits for the answer.
func (e *executor) ask(ctx context.Context, t *turnState, id string, q wire.Payload, emit harness.Emit) (harness.Answer, error) {
	ch := make(chan harness.Answer, 1)
	e.mu.Lock()
	t.waiting[id] = ch
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(t.waiting, id)
		e.mu.Unlock()
	}()
	if err := emit(ctx, q); err != nil {
		// A cancellation can end the wait for the question's write after
		// the question went out and was answered: keep that answer.
		select {
		case a := <-ch:
			return a, nil
		default:
		}
		return harness.Answer{}, err
	}
	select {
	case a := <-ch:
		return a, nil
	case <-ctx.Done():
		// An answer Decide handed over before the cancellation was applied:
		// its receipt already said so (applied=true settles the operation,
		// daemon-protocol.txt:144), so it must not be lost when both are
		// ready and select picks the cancellation.
		select {
		case a := <-ch:
			return a, nil
		default:
		}
		return harness.Answer{}, ctx.Err()
	}
}

// Run plays the steps. Input the Turn's declaration cannot carry (an
// image) is refused before the first step.
func (e *executor) Run(ctx context.Context, turn harness.Turn, emit harness.Emit) (wire.Done, error) {
	if err := harness.CheckInput(turn.Declaration.Capabilities, turn.Input); err != nil {
		return wire.Done{}, err
	}
	// A Builder, not +=: a long stream of deltas would copy the whole
	// content once per delta.
	var content strings.Builder
	var seq uint64
	sc := e.adapter.get()
	native := e.native
	if native == "" {
		native = sc.SessionID
	}
	// The native Session exists from the Turn's start on: a Turn killed
	// mid-way leaves it for a later recovery, as a real Harness's does.
	if err := e.adapter.sessions.ran(sc.SessionsFile, e.key, native); err != nil {
		return wire.Done{}, err
	}
	msgs := &messages{observe: e.observe, runID: turn.RunID}
	done := func() wire.Done {
		// A message still open when the Turn ends early is incomplete; the
		// frame goes out even after a cancellation, before done.
		_ = msgs.end(context.WithoutCancel(ctx), emit, wire.OutputIncomplete)
		d := wire.Done{Content: content.String()}
		if native != "" {
			d.Metadata = &wire.DoneMetadata{AgentSessionID: native}
			e.adapter.sessions.reported(native)
		}
		return d
	}
	t := &turnState{script: sc, runID: turn.RunID, decl: turn.Declaration.Capabilities, notify: turn.Notify,
		inputs: make(chan string, 8), waiting: map[string]chan harness.Answer{}}
	e.mu.Lock()
	e.turn = t
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.turn = nil
		e.mu.Unlock()
	}()
	stream := func(text string) error {
		seq++
		content.WriteString(text)
		return msgs.delta(ctx, emit, text, seq)
	}
	for _, st := range sc.Steps {
		var err error
		var a harness.Answer
		if st.Delta == "" && !st.Echo {
			// Any other step ends the message consecutive deltas made. The
			// message is complete whatever comes next, a cancellation
			// included: under the Run's context a cancellation arriving
			// before this step would drop the frame and leave the message
			// unreported.
			if err := msgs.end(context.WithoutCancel(ctx), emit, wire.OutputCompleted); err != nil {
				return done(), nil
			}
		}
		switch {
		case st.Permission != nil && st.Withdraw:
			if err = emit(ctx, *st.Permission); err == nil {
				err = emit(ctx, harness.Withdrawal{RequestID: st.Permission.RequestID})
			}
			if err == nil {
				content.WriteString("[" + st.Permission.RequestID + ":withdrawn]")
			}
		case st.Permission != nil:
			if a, err = e.ask(ctx, t, st.Permission.RequestID, *st.Permission, emit); err == nil {
				err = stream(answered(err, st.Permission.RequestID, a))
			}
		case st.Choice != nil:
			if a, err = e.ask(ctx, t, st.Choice.AskID, *st.Choice, emit); err == nil {
				err = stream(answered(err, st.Choice.AskID, a))
			}
		case st.Function != nil:
			if a, err = e.ask(ctx, t, st.Function.CallID, *st.Function, emit); err == nil {
				err = stream(answered(err, st.Function.CallID, a))
			}
		case st.AwaitInput:
			select {
			case in := <-t.inputs:
				err = stream(in)
			case <-ctx.Done():
				// An input written (and reported accepted) before the
				// cancellation was consumed: keep it, as ask keeps an answer.
				select {
				case in := <-t.inputs:
					content.WriteString(in)
				default:
				}
				return done(), nil
			}
		case st.Echo:
			err = echo(turn.Input, stream)
		case st.Delta != "":
			err = stream(st.Delta)
		case st.Thinking != "":
			err = emit(ctx, wire.Thinking{Text: st.Thinking})
		case st.Usage != nil:
			err = emit(ctx, *st.Usage)
		case st.ToolCall != nil:
			err = emit(ctx, *st.ToolCall)
		case st.Error != "":
			err = emit(ctx, wire.ErrorFrame{Error: st.Error})
		case st.Fail != "":
			_ = msgs.end(context.WithoutCancel(ctx), emit, wire.OutputIncomplete)
			return wire.Done{}, errors.New(st.Fail)
		case st.Hang:
			<-ctx.Done()
			return done(), nil
		case st.HoldCancel != "":
			<-ctx.Done()
			_ = waitFile(context.Background(), st.HoldCancel)
			return done(), nil
		case st.Delay > 0:
			t := time.NewTimer(time.Duration(st.Delay))
			select {
			case <-ctx.Done():
				t.Stop()
				return done(), nil
			case <-t.C:
			}
		}
		if err != nil {
			// The connection is gone or the Turn was cancelled: settle with
			// what was produced.
			return done(), nil
		}
	}
	if err := msgs.end(context.WithoutCancel(ctx), emit, wire.OutputCompleted); err != nil {
		return done(), nil
	}
	return done(), nil
}

// echo streams the text parts of in, in order, a blank line between
// messages (images were refused before the Turn started).
func echo(in wire.MessageInput, stream func(string) error) error {
	for i, m := range in {
		sep := ""
		if i > 0 {
			sep = "\n\n"
		}
		for _, c := range m.Content {
			if c.Text == "" && sep == "" {
				continue
			}
			if err := stream(sep + c.Text); err != nil {
				return err
			}
			sep = ""
		}
	}
	return nil
}
