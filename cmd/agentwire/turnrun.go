package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentwire/agentwire/wire"
)

// turnOutcome is the error of a Turn that ended other than completed; the
// command exits 1 with it.
type turnOutcome struct {
	ID     string
	Status map[string]any
}

func (e *turnOutcome) Error() string {
	b, _ := json.Marshal(e.Status)
	return "turn " + e.ID + " ended " + string(b)
}

// maxStreamResumes bounds how often `turn run` resumes a dropped stream.
const maxStreamResumes = 5

// runTurnRun submits a Turn and prints its events as they arrive, one
// line each ("event data"), resuming a dropped stream with Last-Event-ID.
// It returns nil only for a completed Turn.
//
// Questions the Turn asks are answered through p (nil answers none).
func (c *apiClient) runTurnRun(session, text string, stdout io.Writer, p *prompter) error {
	input := []any{map[string]any{"content": []any{map[string]any{"type": "input_text", "text": text}}}}
	var created bytes.Buffer
	if err := c.call("POST", "/api/v1/sessions/"+session+"/turns", map[string]any{"input": input}, &created); err != nil {
		return err
	}
	var turn struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(created.Bytes(), &turn); err != nil || turn.ID == "" {
		return fmt.Errorf("the API answered no Turn ID: %s", strings.TrimSpace(created.String()))
	}
	c.line(stdout, "turn", mustJSON(map[string]string{"id": turn.ID}), turn.ID)
	return c.follow(turn.ID, "", stdout, p)
}

// follow prints the Turn's events after last (an event ID, "" for all)
// until the Turn ends, resuming a dropped stream with Last-Event-ID; it
// returns nil only for a completed Turn. The first Ctrl-C detaches: it
// prints how to re-attach after the last event printed, or to cancel, and
// exits 130 while the Turn goes on.
//
// decision: a question met in the Turn's history is asked only once Core
// says the history was sent (its "live" event), not when its event
// arrives: a question already settled is followed in the history by its
// interaction_outcome (or interaction_withdrawn), and asking it again
// would show the user a question that no longer waits. After "live",
// each question is asked as it comes.
func (c *apiClient) follow(turnID, last string, stdout io.Writer, p *prompter) error {
	cursor := &eventCursor{id: last}
	waiting := &openQuestions{}
	stopDetach, detached := c.detachOnInterrupt(turnID, cursor, p, waiting)
	defer stopDetach()
	if p != nil {
		p.turn = turnID
	}
	on := func(event, data string) (bool, error) {
		if detached() {
			// The user detached: nothing more is printed, and the
			// interrupt handler alone decides how the process ends.
			detachedForever()
		}
		c.line(stdout, event, data, data)
		if p == nil {
			return false, nil
		}
		var ev struct {
			InteractionID string `json:"interaction_id"`
		}
		_ = json.Unmarshal([]byte(data), &ev)
		switch event {
		case wire.TypePermissionRequest, wire.TypePromptForUserChoice, wire.TypeFunctionCall:
			waiting.add(ev.InteractionID, event, data)
		case "interaction_outcome", "interaction_withdrawn":
			waiting.settle(ev.InteractionID)
		}
		return false, nil
	}
	var idle func() error
	if p != nil {
		idle = func() error {
			for {
				q, ok := waiting.next()
				if !ok || detached() {
					return nil
				}
				sent, err := c.answerQuestion(turnID, p, q.event, q.data, stdout)
				if err != nil {
					return err
				}
				if sent {
					waiting.settle(q.id)
				}
			}
		}
	}
	for attempt := 0; attempt <= maxStreamResumes; attempt++ {
		status, _, err := c.stream(turnID, cursor, on, idle)
		if detached() {
			detachedForever()
		}
		if err != nil {
			return err
		}
		if status != nil {
			c.line(stdout, "status", mustJSON(status), mustJSON(status))
			if status["state"] == "completed" {
				return nil
			}
			return &turnOutcome{ID: turnID, Status: status}
		}
	}
	return fmt.Errorf("turn %s: the event stream kept closing before the Turn finished", turnID)
}

// openQuestions are the question events a follower has seen and not yet
// seen settled, in the order they came; the Ctrl-C handler reads them from
// another goroutine.
type openQuestions struct {
	mu sync.Mutex
	qs []openQuestion
}

type openQuestion struct {
	id, event, data string
	handled         bool // handed to the prompter, which left it open
}

func (o *openQuestions) add(id, event, data string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.qs = append(o.qs, openQuestion{id: id, event: event, data: data})
}

func (o *openQuestions) settle(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, q := range o.qs {
		if q.id == id {
			o.qs = append(o.qs[:i:i], o.qs[i+1:]...)
			return
		}
	}
}

// next is the first question not yet handed to the prompter, marked as
// handed now.
func (o *openQuestions) next() (openQuestion, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range o.qs {
		if !o.qs[i].handled {
			o.qs[i].handled = true
			return o.qs[i], true
		}
	}
	return openQuestion{}, false
}

// ids are the open questions' interaction IDs.
func (o *openQuestions) ids() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, q := range o.qs {
		if q.event != wire.TypeFunctionCall {
			out = append(out, q.id)
		}
	}
	return out
}

// eventCursor is the last event ID a stream handed on; the Ctrl-C handler
// reads it from another goroutine.
type eventCursor struct {
	mu sync.Mutex
	id string
}

func (c *eventCursor) get() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id
}

func (c *eventCursor) set(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.id = id
}

// detachOnInterrupt makes the first Ctrl-C detach: it prints (on the
// prompter's output, the terminal) how to follow the Turn again or cancel
// it, and exits 130 unless a second Ctrl-C comes within cancelWindow,
// which cancels the Turn first.
//
// Once detached, the follower must neither print nor return an outcome:
// a Turn cancelled by the second Ctrl-C would otherwise end the process
// with its own status before "cancel sent" is printed (detached reports
// it, and the follower then waits for the handler's exit).
func (c *apiClient) detachOnInterrupt(turnID string, cursor *eventCursor, p *prompter, waiting *openQuestions) (stop func(), detached func() bool) {
	var isDetached atomic.Bool
	if p == nil || p.out == nil {
		return func() {}, isDetached.Load
	}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt)
	fmt.Fprintf(p.out, "following turn %s (Ctrl-C detaches, twice cancels)\n", turnID)
	done := make(chan struct{})
	go func() {
		select {
		case <-sig:
		case <-done:
			return
		}
		isDetached.Store(true)
		after := ""
		if id := cursor.get(); id != "" {
			after = "--after " + id + " "
		}
		fmt.Fprintf(p.out, "\ndetached from turn %s, which goes on running.\n  follow it again: agentwire turn attach %s%s\n  cancel it:       agentwire turn cancel %s\n",
			turnID, after, turnID, turnID)
		// A question shown but not answered is before the --after point:
		// following again would not show it, so it is named here.
		for _, id := range waiting.ids() {
			fmt.Fprintf(p.out, "  still waiting:   agentwire turn answer %s %s --approve|--deny|--choose QUESTION=ANSWER|--dismiss\n", turnID, id)
		}
		fmt.Fprintf(p.out, "(Ctrl-C again within %v cancels it now)\n", cancelWindow)
		t := time.NewTimer(cancelWindow)
		select {
		case <-sig:
			var out bytes.Buffer
			if err := c.call("POST", "/api/v1/turns/"+turnID+"/cancel", nil, &out); err != nil {
				fmt.Fprintf(p.out, "cancel not sent: %v\n", err)
			} else {
				fmt.Fprintf(p.out, "cancel sent: %s\n", compactJSON(out.Bytes()))
			}
		case <-t.C:
		}
		os.Exit(exitInterrupted)
	}()
	return func() {
		signal.Stop(sig)
		close(done)
	}, isDetached.Load
}

// detachedForever parks the follower after a detach; the interrupt
// handler ends the process.
func detachedForever() {
	select {}
}

// cancelWindow is how long after the first Ctrl-C a second one cancels
// the Turn instead of only detaching.
const cancelWindow = 2 * time.Second

// exitInterrupted is the exit status after Ctrl-C (128 + SIGINT).
const exitInterrupted = 130

// line prints one line of a followed Turn: "NAME TEXT" for a person, or
// with --json a JSON Lines record {"event":NAME,"data":DATA}.
func (c *apiClient) line(w io.Writer, name, data, text string) {
	if c.jsonLines {
		fmt.Fprintf(w, "{\"event\":%s,\"data\":%s}\n", mustJSON(name), compactJSON([]byte(data)))
		return
	}
	fmt.Fprintf(w, "%s %s\n", name, text)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// stream reads the Turn's SSE stream after *last, handing each event to
// on, until the Turn's final status (returned), on asks to stop (stopped)
// or the stream closes before either (both zero: the caller resumes).
// idle, when not nil, runs at Core's "live" event (the history was sent)
// and after each event that follows it.
func (c *apiClient) stream(turnID string, last *eventCursor, on func(event, data string) (bool, error), idle func() error) (status map[string]any, stopped bool, err error) {
	req, err := http.NewRequest("GET", c.base+"/api/v1/turns/"+turnID+"/events", nil)
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "text/event-stream")
	if id := last.get(); id != "" {
		req.Header.Set("Last-Event-ID", id)
	}
	// No client timeout: a Turn may run for long; the server ends the
	// stream once the Turn is terminal.
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, false, apiError("GET", req.URL.String(), resp.Status, resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	live := false
	var id, event, data string
	for {
		if !sc.Scan() {
			// The stream closed (or broke) before the status: the caller
			// resumes.
			return nil, false, nil
		}
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "":
			if event == "status" {
				var st map[string]any
				if err := json.Unmarshal([]byte(data), &st); err != nil {
					return nil, false, fmt.Errorf("the final status is not JSON: %w", err)
				}
				return st, false, nil
			}
			if event == "end" {
				// Core ended the stream because this client fell behind
				// (subscriber_overflow): resume after the last event seen.
				return nil, false, nil
			}
			if event == "live" {
				// The history was sent: what is still open waits now.
				live = true
				if idle != nil {
					if err := idle(); err != nil {
						return nil, false, err
					}
				}
				id, event, data = "", "", ""
				continue
			}
			if event != "" {
				// The event counts as seen once handed on: following
				// again after a Ctrl-C must not show it twice (a question
				// still open is named by the detach message instead).
				if id != "" {
					last.set(id)
				}
				stop, err := on(event, data)
				if err != nil {
					return nil, false, err
				}
				if stop {
					return nil, true, nil
				}
				if live && idle != nil {
					if err := idle(); err != nil {
						return nil, false, err
					}
				}
			}
			id, event, data = "", "", ""
		}
	}
}

// answerQuestion asks p about a question event and posts the answer;
// sent is false when p left the question open. A question settled
// meanwhile (409) is reported, not fatal: the Turn goes on and its stream
// says what became of it.
func (c *apiClient) answerQuestion(turnID string, p *prompter, event, data string, stdout io.Writer) (sent bool, err error) {
	id, body, err := p.answer(event, data)
	if err != nil || body == nil {
		return false, err
	}
	var out bytes.Buffer
	if err := c.call("POST", "/api/v1/turns/"+turnID+"/interactions/"+id, body, &out); err != nil {
		c.line(stdout, "answer_not_sent", mustJSON(map[string]string{"interaction_id": id, "error": err.Error()}), fmt.Sprintf("%s: %v", id, err))
		return true, nil
	}
	b, _ := json.Marshal(body)
	c.line(stdout, "answer", mustJSON(map[string]any{"interaction_id": id, "answer": json.RawMessage(b)}), id+" "+string(b))
	return true, nil
}
