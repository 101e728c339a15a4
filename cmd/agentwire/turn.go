package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"
)

// The turn commands: each has its own flags, takes them before or after
// its arguments, and says what is wrong with a command line.

const turnUsage = `usage: agentwire turn <command> [flags] ARGS

commands:
  submit   queue a Turn of a Session and print it
  run      queue a Turn and follow its events, answering its questions on the terminal
  attach   follow a Turn's events (again), from the start or after an event
  input    send active input to a running Turn and show its receipts
  answer   answer a Turn's pending question (permission or user choice)
  list     list a Session's Turns
  status   print a Turn's status
  cancel   cancel a Turn

Run "agentwire turn <command> -h" for one command's flags and examples.`

// stdin is where `turn run` reads the answers to a Turn's questions.
var stdin io.Reader = os.Stdin

// stdinIsTerminal: a person can answer on stdin. A reader that is not a
// file (a test's) counts as one.
func stdinIsTerminal() bool {
	f, ok := stdin.(*os.File)
	return !ok || isatty.IsTerminal(f.Fd())
}

var turnCommands = map[string]subcommand{
	"submit": {use: "turn submit [flags] TEXT...", about: "Queues a Turn of the Session with TEXT (the words joined by spaces) and prints it as JSON.",
		examples: []string{"agentwire turn submit --session SESSION fix the failing test"}},
	"run": {use: "turn run [flags] TEXT...", about: "Queues a Turn with TEXT and prints its events as they arrive, one line each (EVENT JSON), asking its\n" +
		"questions on the terminal. When the standard input is not a terminal (or ends), a question is left\n" +
		"for another client (agentwire turn answer) and that is said once; nothing is answered by default.\n" +
		"Exit 0 only when the Turn completed, 1 when it ended otherwise. Ctrl-C detaches (exit 130; the\n" +
		"Turn goes on, and the commands to follow it again, answer what is open or cancel it are printed);\n" +
		"a second Ctrl-C within 2 s cancels the Turn.",
		examples: []string{"agentwire turn run --session SESSION fix the failing test", "agentwire turn run --session SESSION --approve-all 'list the files'",
			"agentwire turn run --session SESSION --functions ./tools.sh 'what is the weather in Paris?'"}},
	"attach": {use: "turn attach [flags] TURN", about: "Follows a Turn's events until it ends, from the first one or after --after (an event ID a\n" +
		"stream printed), asking its open questions on the terminal as turn run does; a question whose\n" +
		"outcome is already in the stream is not asked again. Exit codes and Ctrl-C as turn run.",
		examples: []string{"agentwire turn attach TURN", "agentwire turn attach --after 12 TURN"}},
	"input": {use: "turn input [flags] TURN TEXT...", about: "Sends TEXT as active input to the running Turn and prints its receipts as the Runtime reports\n" +
		"them (written, then accepted) until its outcome is known.",
		examples: []string{"agentwire turn input TURN also update the README"}},
	"answer": {use: "turn answer [flags] TURN INTERACTION", about: "Answers a pending question of the Turn: a permission with --approve or --deny, a user-choice\n" +
		"question with --choose QUESTION=ANSWER (repeatable) or --dismiss, a function call with --result TEXT\n" +
		"(--failed for a failed call). INTERACTION is the interaction_id of the question's event.",
		examples: []string{"agentwire turn answer --approve TURN INTERACTION", "agentwire turn answer --choose q1=blue TURN INTERACTION",
			"agentwire turn answer --result 'sunny, 21 C' TURN INTERACTION"}},
	"list": {use: "turn list [flags]", about: "Lists the Session's newest Turns, oldest first: a table (local times), or the API's JSON with --json.",
		examples: []string{"agentwire turn list --session SESSION", "agentwire turn list --session SESSION --limit 100 --json"}},
	"status": {use: "turn status [flags] TURN", about: "Prints the Turn's status as JSON.",
		examples: []string{"agentwire turn status TURN"}},
	"cancel": {use: "turn cancel [flags] TURN", about: "Asks Core to cancel the Turn and prints the cancellation's delivery.",
		examples: []string{"agentwire turn cancel TURN"}},
}

func runTurn(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, turnUsage)
		return errUsage
	}
	if oneOf(args[0], "-h", "--help", "help") {
		fmt.Fprintln(stdout, turnUsage)
		return nil
	}
	cmd, ok := turnCommands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "agentwire turn: unknown command %q\n\n%s\n", args[0], turnUsage)
		return errUsage
	}
	fs := cmd.flags(stderr)
	core := fs.String("core", "", "Core's base URL (default $AGENTWIRE_CORE)")
	var session *string
	if oneOf(args[0], "submit", "run", "list") {
		session = fs.String("session", "", "the Session's ID (required)")
	}
	limit, asJSON := new(int), new(bool)
	if args[0] == "list" {
		limit = fs.Int("limit", 20, "at most this many of the newest Turns (1 to 100)")
		asJSON = fs.Bool("json", false, "print the API's JSON instead of a table")
	}
	if oneOf(args[0], "run", "attach", "input") {
		asJSON = fs.Bool("json", false, `print JSON Lines, one {"event":NAME,"data":{...}} per line, instead of "NAME JSON" lines`)
	}
	var approveAll *bool
	functions := new(string)
	if oneOf(args[0], "run", "attach") {
		approveAll = fs.Bool("approve-all", false, "approve every permission request without asking, terminal or not (user-choice questions are still asked, or left for another client)")
		functions = fs.String("functions", "", "answer the Turn's function calls with this shell command: the call's JSON on its standard\n"+
			"input (AGENTWIRE_FUNCTION and AGENTWIRE_CALL_ID set), its standard output the result, success when it exits 0")
	}
	quiet := new(bool)
	if args[0] == "submit" {
		quiet = fs.Bool("quiet", false, "print only the new Turn's ID, for TURN=$(agentwire turn submit -quiet ...)")
	}
	after := ""
	if args[0] == "attach" {
		fs.StringVar(&after, "after", "", "follow from after this event ID (none: from the first event)")
	}
	var approve, deny, dismiss, failed *bool
	var result *string
	var choose choices
	if args[0] == "answer" {
		approve = fs.Bool("approve", false, "approve the permission")
		deny = fs.Bool("deny", false, "deny the permission")
		dismiss = fs.Bool("dismiss", false, "dismiss the user-choice question without answering")
		fs.Var(&choose, "choose", "QUESTION=ANSWER for a user-choice question; repeatable (several answers to one question: repeat it)")
		result = fs.String("result", "", "the function call's result text")
		failed = fs.Bool("failed", false, "with --result: the function call failed (success false)")
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return flagsDone(err)
	}
	pos := fs.Args()
	resultSet := false // --result given, even empty
	fs.Visit(func(f *flag.Flag) { resultSet = resultSet || f.Name == "result" })
	switch args[0] {
	case "submit", "run":
		if *session == "" {
			return usageError(fs, "--session is required")
		}
		if len(pos) == 0 {
			return usageError(fs, "the Turn's text is missing")
		}
	case "list":
		if *session == "" {
			return usageError(fs, "--session is required")
		}
		if len(pos) != 0 {
			return usageError(fs, "turn list takes no arguments, got %q", pos)
		}
	case "input":
		if len(pos) < 2 {
			return usageError(fs, "want TURN and the input's text")
		}
	case "answer":
		if len(pos) != 2 {
			return usageError(fs, "want TURN and INTERACTION, got %d arguments", len(pos))
		}
		if n := count(*approve, *deny, *dismiss, len(choose) > 0, resultSet); n != 1 {
			return usageError(fs, "give one of --approve, --deny, --choose, --dismiss or --result")
		}
		if *failed && !resultSet {
			return usageError(fs, "--failed goes with --result")
		}
	default:
		if len(pos) != 1 {
			return usageError(fs, "want one TURN, got %d arguments", len(pos))
		}
	}
	c, err := newAPIClient(*core)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	c.jsonLines = *asJSON
	prompt := func() *prompter {
		return &prompter{in: bufio.NewReader(stdin), out: stderr, approveAll: approveAll != nil && *approveAll, functions: *functions,
			interactive: stdinIsTerminal()}
	}
	switch args[0] {
	case "list":
		return c.listTurns(*session, *limit, *asJSON, stdout)
	case "status":
		return c.call("GET", "/api/v1/turns/"+pos[0], nil, stdout)
	case "cancel":
		return c.call("POST", "/api/v1/turns/"+pos[0]+"/cancel", nil, stdout)
	case "run":
		return c.runTurnRun(*session, strings.Join(pos, " "), stdout, prompt())
	case "attach":
		return c.follow(pos[0], after, stdout, prompt())
	case "input":
		return c.turnInput(pos[0], strings.Join(pos[1:], " "), stdout)
	case "answer":
		body := map[string]any{}
		switch {
		case *approve, *deny:
			body["approved"] = *approve
		case *dismiss:
			body["cancelled"] = true
		case resultSet:
			body["success"] = !*failed
			body["content"] = []map[string]string{{"type": "input_text", "text": *result}}
		default:
			body["question_answers"] = choose.answers()
		}
		return c.call("POST", "/api/v1/turns/"+pos[0]+"/interactions/"+pos[1], body, stdout)
	}
	body := map[string]any{"input": messageInput(strings.Join(pos, " "))}
	if *quiet {
		return c.callID("POST", "/api/v1/sessions/"+*session+"/turns", body, stdout)
	}
	return c.call("POST", "/api/v1/sessions/"+*session+"/turns", body, stdout)
}

// listTurns prints a Session's Turns as a table, or the API's JSON.
func (c *apiClient) listTurns(session string, limit int, asJSON bool, stdout io.Writer) error {
	path := fmt.Sprintf("/api/v1/sessions/%s/turns?limit=%d", url.PathEscape(session), limit)
	if asJSON {
		return c.call("GET", path, nil, stdout)
	}
	var out bytes.Buffer
	if err := c.call("GET", path, nil, &out); err != nil {
		return err
	}
	var l struct {
		Turns []struct {
			ID        string         `json:"id"`
			CreatedAt time.Time      `json:"created_at"`
			UpdatedAt time.Time      `json:"updated_at"`
			Status    map[string]any `json:"status"`
		} `json:"turns"`
	}
	if err := json.Unmarshal(out.Bytes(), &l); err != nil {
		return fmt.Errorf("the API answered no Turn list: %w", err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TURN\tSTATE\tREASON\tCREATED\tUPDATED")
	for _, t := range l.Turns {
		state, _ := t.Status["state"].(string)
		reason, _ := t.Status["reason"].(string)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, state, dash(reason), t.CreatedAt.Local().Format(time.DateTime), t.UpdatedAt.Local().Format(time.DateTime))
	}
	return tw.Flush()
}

func messageInput(text string) []any {
	return []any{map[string]any{"content": []any{map[string]any{"type": "input_text", "text": text}}}}
}

func count(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// turnInput sends active input, then follows the Turn's events and prints
// the receipts of this input until its outcome (or the Turn's end).
func (c *apiClient) turnInput(turnID, text string, stdout io.Writer) error {
	var idb [8]byte
	_, _ = rand.Read(idb[:])
	inputID := "cli-" + hex.EncodeToString(idb[:])
	var out bytes.Buffer
	if err := c.call("POST", "/api/v1/turns/"+turnID+"/input", map[string]any{"input_id": inputID, "input": messageInput(text)}, &out); err != nil {
		return err
	}
	c.line(stdout, "input", out.String(), compactJSON(out.Bytes()))
	last, outcome := &eventCursor{}, ""
	on := func(event, data string) (bool, error) {
		var ev struct {
			InputID string `json:"input_id"`
			Outcome string `json:"outcome"`
		}
		if json.Unmarshal([]byte(data), &ev) != nil || ev.InputID != inputID {
			return false, nil
		}
		switch event {
		case "prompt_steer_ack":
			c.line(stdout, "receipt", data, data)
		case "input_outcome":
			outcome = ev.Outcome
			c.line(stdout, "outcome", mustJSON(map[string]string{"input_id": inputID, "outcome": ev.Outcome}), ev.Outcome)
			return true, nil
		}
		return false, nil
	}
	for attempt := 0; attempt <= maxStreamResumes; attempt++ {
		status, stopped, err := c.stream(turnID, last, on, nil)
		if err != nil {
			return err
		}
		if stopped {
			if outcome != "accepted" {
				return fmt.Errorf("input %s: %s", inputID, outcome)
			}
			return nil
		}
		if status != nil {
			return fmt.Errorf("input %s: the Turn ended (%s) before its outcome was known", inputID, mustJSON(status))
		}
	}
	return fmt.Errorf("input %s: the event stream kept closing", inputID)
}

func compactJSON(b []byte) string {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return strings.TrimSpace(string(b))
	}
	return out.String()
}

// choices are answer's --choose QUESTION=ANSWER flags, in order.
type choices []string

func (c *choices) String() string { return strings.Join(*c, ",") }

func (c *choices) Set(v string) error {
	q, a, ok := strings.Cut(v, "=")
	if !ok || q == "" || a == "" {
		return fmt.Errorf("want QUESTION=ANSWER, got %q", v)
	}
	*c = append(*c, v)
	return nil
}

// answers groups the answers by question, questions in first-seen order.
func (c choices) answers() []any {
	var order []string
	by := map[string][]string{}
	for _, v := range c {
		q, a, _ := strings.Cut(v, "=")
		if _, seen := by[q]; !seen {
			order = append(order, q)
		}
		by[q] = append(by[q], a)
	}
	out := make([]any, 0, len(order))
	for _, q := range order {
		out = append(out, map[string]any{"question_id": q, "answers": by[q]})
	}
	return out
}

var _ flag.Value = (*choices)(nil)
