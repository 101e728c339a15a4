package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agentwire/agentwire/wire"
)

// prompter answers the questions a running Turn asks (permission requests
// and user-choice questions) from a line-oriented input, normally the
// terminal: the question goes to out (stderr, so that stdout stays the
// event stream) and each answer is one line.
//
// decision: the command never answers on the user's behalf. When the
// input is not a terminal (a script, a pipe, /dev/null), or once it ends,
// a question is left pending for another client (agentwire turn answer,
// the API), and out says so once: denying a permission or cancelling a
// question because nobody was there to read it would decide something no
// one decided. --approve-all approves permission requests without asking,
// terminal or not, because the user asked for exactly that; user-choice
// questions are still asked (or left), since no answer can be assumed for
// them.
type prompter struct {
	in         *bufio.Reader
	out        io.Writer
	approveAll bool
	// interactive: in is a terminal a person answers on. A prompter that
	// is not leaves every question it would have asked to another client.
	interactive bool
	// turn is the followed Turn's ID, for the hint on answering elsewhere.
	turn string
	// leftNoted: the hint on leaving questions to another client was
	// printed (it is printed once).
	leftNoted bool
	// functions is the command that answers function calls (--functions);
	// "" leaves them to another client.
	functions string
}

// leave leaves a question for another client, saying so (and how) the
// first time.
func (p *prompter) leave(why string) {
	if p.leftNoted || p.out == nil {
		return
	}
	p.leftNoted = true
	turn := p.turn
	if turn == "" {
		turn = "TURN"
	}
	fmt.Fprintf(p.out, "questions are left for another client (%s): answer one with\n"+
		"  agentwire turn answer %s INTERACTION --approve|--deny|--choose QUESTION=ANSWER|--dismiss\n"+
		"(INTERACTION is the interaction_id of the question's event)\n", why, turn)
}

// question is the journal event Core writes for a question
// (permission_request or prompt_for_user_choice).
type question struct {
	InteractionID string          `json:"interaction_id"`
	Kind          string          `json:"kind"`
	Request       json.RawMessage `json:"request"`
}

// answer returns the API body answering the question in data, or nil
// when the event is not a question.
func (p *prompter) answer(event, data string) (string, map[string]any, error) {
	if event == wire.TypeFunctionCall {
		if p.functions == "" {
			if p.out != nil {
				fmt.Fprintln(p.out, "a function call waits for its result: answer it with agentwire turn answer --result TEXT TURN INTERACTION (or POST /api/v1/turns/TURN/function-results), or run the Turn with --functions CMD")
			}
			return "", nil, nil
		}
		return functionResult(p.functions, data)
	}
	if event != wire.TypePermissionRequest && event != wire.TypePromptForUserChoice {
		return "", nil, nil
	}
	var q question
	if err := json.Unmarshal([]byte(data), &q); err != nil || q.InteractionID == "" {
		return "", nil, fmt.Errorf("the %s event has no interaction_id", event)
	}
	switch q.Kind {
	case "permission":
		var r wire.PermissionRequest
		if err := json.Unmarshal(q.Request, &r); err != nil {
			return "", nil, fmt.Errorf("the permission request does not decode: %w", err)
		}
		approved, ok := p.permission(r)
		if !ok {
			return "", nil, nil
		}
		return q.InteractionID, map[string]any{"approved": approved}, nil
	case "user_choice":
		var r wire.PromptForUserChoice
		if err := json.Unmarshal(q.Request, &r); err != nil {
			return "", nil, fmt.Errorf("the user-choice question does not decode: %w", err)
		}
		body := p.choice(r)
		if body == nil {
			return "", nil, nil
		}
		return q.InteractionID, body, nil
	}
	return "", nil, nil
}

// line reads one answer line; ok is false at the end of the input, after
// which nothing more is asked.
func (p *prompter) line() (string, bool) {
	s, err := p.in.ReadString('\n')
	if err != nil && s == "" {
		p.interactive = false
		fmt.Fprintln(p.out)
		p.leave("the standard input ended")
		return "", false
	}
	return strings.TrimSpace(s), true
}

// permission asks about a permission request; ok is false when it is
// left unanswered.
func (p *prompter) permission(r wire.PermissionRequest) (approved, ok bool) {
	what := r.Tool
	if r.Title != "" {
		what += ": " + r.Title
	}
	if r.Detail != "" {
		what += " (" + r.Detail + ")"
	}
	if p.approveAll {
		fmt.Fprintf(p.out, "permission %s: approved (--approve-all)\n", what)
		return true, true
	}
	if !p.interactive {
		p.leave("the standard input is not a terminal")
		return false, false
	}
	fmt.Fprintf(p.out, "permission %s\napprove? [y/N] ", what)
	s, ok := p.line()
	if !ok {
		return false, false
	}
	return strings.EqualFold(s, "y") || strings.EqualFold(s, "yes"), true
}

// choice asks each question in turn. An option is picked by its number
// (several, comma-separated, for multi_select), any other text is a typed
// answer, and an empty line leaves the question unanswered. It returns
// nil when the whole set is left to another client.
func (p *prompter) choice(r wire.PromptForUserChoice) map[string]any {
	if !p.interactive {
		p.leave("the standard input is not a terminal")
		return nil
	}
	answers := []map[string]any{}
	for _, q := range r.Questions {
		if q.Header != "" {
			fmt.Fprintf(p.out, "[%s] ", q.Header)
		}
		fmt.Fprintln(p.out, q.Question)
		for i, o := range q.Options {
			fmt.Fprintf(p.out, "  %d) %s", i+1, o.Label)
			if o.Description != "" {
				fmt.Fprintf(p.out, " - %s", o.Description)
			}
			fmt.Fprintln(p.out)
		}
		hint := "number"
		if q.MultiSelect {
			hint = "numbers, comma-separated"
		}
		fmt.Fprintf(p.out, "answer (%s, text, or empty to skip): ", hint)
		s, ok := p.line()
		if !ok {
			return nil
		}
		if s == "" {
			continue // unanswered (daemon-protocol.txt:82)
		}
		answers = append(answers, map[string]any{"question_id": q.ID, "answers": picked(q, s)})
	}
	return map[string]any{"question_answers": answers}
}

// picked maps an answer line onto option labels when it names options by
// number, and keeps it as typed text otherwise.
func picked(q wire.UserChoiceQuestion, s string) []string {
	parts := []string{s}
	if q.MultiSelect {
		parts = strings.Split(s, ",")
	}
	var labels []string
	for _, part := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 || n > len(q.Options) {
			return []string{s}
		}
		labels = append(labels, q.Options[n-1].Label)
	}
	return labels
}
