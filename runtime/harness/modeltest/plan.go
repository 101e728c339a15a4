package modeltest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// itemKind is the kind of one output item (Responses API) or content
// block (Messages API).
type itemKind int

const (
	itemMessage itemKind = iota + 1
	itemReasoning
	itemFunctionCall
	itemCustomToolCall
)

// planItem is one item of a turn, complete before the stream starts.
type planItem struct {
	kind      itemKind
	index     int
	id        string // the item id (Responses API)
	callID    string
	name      string
	text      string // the whole text, reasoning, arguments or input
	signature string
}

type stepOp int

const (
	opBegin stepOp = iota + 1
	opDelta
	opEnd
	opHold
	opSleep
	opDrop
	opFail
)

type step struct {
	op    stepOp
	item  *planItem
	delta string
	gate  *Gate
	delay time.Duration
	err   HTTPError
}

// plan is a turn laid out as the steps of one stream.
type plan struct {
	items []*planItem
	steps []step
	usage Usage
	// calls is true when the turn calls a tool.
	calls bool
	stop  string
}

// idSource mints the ids of one server.
type idSource func(prefix string) string

// buildPlan lays t out for api. ids names items the script left unnamed.
func buildPlan(t Turn, api API, ids idSource) (*plan, error) {
	p := &plan{usage: DefaultUsage(), stop: t.StopReason}
	if t.Usage != nil {
		p.usage = *t.Usage
	}
	var cur *planItem
	var deltas []string
	closeCur := func() {
		if cur == nil {
			return
		}
		cur.text = strings.Join(deltas, "")
		p.steps = append(p.steps, step{op: opEnd, item: cur})
		cur, deltas = nil, nil
	}
	open := func(kind itemKind) *planItem {
		it := &planItem{kind: kind, index: len(p.items)}
		p.items = append(p.items, it)
		p.steps = append(p.steps, step{op: opBegin, item: it})
		return it
	}
	var walk func(parts []Part) (stop bool, err error)
	walk = func(parts []Part) (bool, error) {
		for _, part := range parts {
			switch part.kind {
			case partSeq:
				stop, err := walk(part.seq)
				if stop || err != nil {
					return stop, err
				}
			case partText, partReasoning:
				kind, prefix := itemMessage, "msg"
				if part.kind == partReasoning {
					kind, prefix = itemReasoning, "rs"
				}
				if cur == nil || cur.kind != kind {
					closeCur()
					cur = open(kind)
					cur.id = ids(prefix)
				}
				if part.signature != "" {
					cur.signature = part.signature
				}
				for _, d := range part.deltas {
					if d == "" {
						continue
					}
					deltas = append(deltas, d)
					p.steps = append(p.steps, step{op: opDelta, item: cur, delta: d})
				}
			case partFunctionCall, partCustomToolCall:
				if part.kind == partCustomToolCall && api != APIResponses {
					return false, fmt.Errorf("custom tool call %s: the %s API has no custom tool calls", part.name, api)
				}
				closeCur()
				kind, prefix := itemFunctionCall, "fc"
				if part.kind == partCustomToolCall {
					kind, prefix = itemCustomToolCall, "ctc"
				}
				it := open(kind)
				it.id = ids(prefix)
				it.name = part.name
				it.callID = part.callID
				if it.callID == "" {
					if api == APIMessages {
						it.callID = ids("toolu")
					} else {
						it.callID = ids("call")
					}
				}
				it.text = part.arguments
				for _, d := range splitHalf(part.arguments) {
					p.steps = append(p.steps, step{op: opDelta, item: it, delta: d})
				}
				p.steps = append(p.steps, step{op: opEnd, item: it})
				p.calls = true
			case partHold:
				if part.gate == nil {
					return false, errors.New("hold without a gate")
				}
				p.steps = append(p.steps, step{op: opHold, gate: part.gate})
			case partSleep:
				p.steps = append(p.steps, step{op: opSleep, delay: part.delay})
			case partDrop:
				p.steps = append(p.steps, step{op: opDrop})
				return true, nil
			case partStreamError:
				p.steps = append(p.steps, step{op: opFail, err: errorFor(api, *part.err)})
				return true, nil
			default:
				return false, fmt.Errorf("part of unknown kind %d", part.kind)
			}
		}
		return false, nil
	}
	stopped, err := walk(t.Parts)
	if err != nil {
		return nil, fmt.Errorf("modeltest: build turn: %w", err)
	}
	if !stopped {
		closeCur()
	}
	for _, it := range p.items {
		if it.kind == itemReasoning && it.signature == "" {
			it.signature = "modeltest-signature-" + it.id
		}
	}
	if p.stop == "" {
		p.stop = "end_turn"
		if p.calls {
			p.stop = "tool_use"
		}
	}
	return p, nil
}

// splitHalf splits s into two deltas at a rune boundary near its middle
// (one when s is short).
func splitHalf(s string) []string {
	if utf8.RuneCountInString(s) < 2 {
		if s == "" {
			return nil
		}
		return []string{s}
	}
	mid := len(s) / 2
	for mid > 0 && !utf8.RuneStart(s[mid]) {
		mid--
	}
	return []string{s[:mid], s[mid:]}
}

// streamer writes one API's events for a plan.
type streamer interface {
	start() error
	begin(it *planItem) error
	delta(it *planItem, d string) error
	end(it *planItem) error
	fail(e HTTPError) error
	finish() error
}

// errDropped reports that the plan asked to drop the connection.
var errDropped = errors.New("modeltest: connection dropped by the script")

// runPlan streams p through st, pausing as it says. It returns errDropped
// for a Drop, and the context's error when ctx ends during a pause.
func runPlan(ctx context.Context, p *plan, st streamer) error {
	if err := st.start(); err != nil {
		return err
	}
	for _, s := range p.steps {
		var err error
		switch s.op {
		case opBegin:
			err = st.begin(s.item)
		case opDelta:
			err = st.delta(s.item, s.delta)
		case opEnd:
			err = st.end(s.item)
		case opHold:
			err = pause(ctx, s)
		case opSleep:
			err = pause(ctx, s)
		case opDrop:
			return errDropped
		case opFail:
			return st.fail(s.err)
		}
		if err != nil {
			return err
		}
	}
	return st.finish()
}

// pause waits at a Hold or Sleep step.
func pause(ctx context.Context, s step) error {
	if s.op == opHold {
		s.gate.arrive()
		select {
		case <-s.gate.open:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("modeltest: held stream: %w", context.Cause(ctx))
		}
	}
	if s.delay <= 0 {
		return nil
	}
	timer := time.NewTimer(s.delay)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("modeltest: slow stream: %w", context.Cause(ctx))
	}
}

// pauseAll runs the pauses of p without streaming, for an answer that is
// not streamed; it reports a Drop or a stream error step it meets.
func pauseAll(ctx context.Context, p *plan) (failed *HTTPError, err error) {
	for _, s := range p.steps {
		switch s.op {
		case opHold, opSleep:
			if err := pause(ctx, s); err != nil {
				return nil, err
			}
		case opDrop:
			return nil, errDropped
		case opFail:
			e := s.err
			return &e, nil
		}
	}
	return nil, nil
}
