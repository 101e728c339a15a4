package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// The public API's CLI wrappers. The API key comes from AGENTWIRE_API_KEY
// and travels only in the Authorization header, never in a URL or a flag
// (flags show up in process listings).

type apiClient struct {
	base, key string
}

func newAPIClient(core string) (*apiClient, error) {
	key := os.Getenv("AGENTWIRE_API_KEY")
	if key == "" {
		return nil, errors.New("set AGENTWIRE_API_KEY to a project API key")
	}
	if core == "" {
		return nil, errors.New("--core is required (e.g. http://127.0.0.1:8080)")
	}
	return &apiClient{base: strings.TrimRight(core, "/"), key: key}, nil
}

// call sends a JSON request and writes the JSON answer to out; a non-2xx
// answer becomes an error carrying the API's error body.
func (c *apiClient) call(method, path string, body any, out io.Writer) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	hc := &http.Client{Timeout: 30 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, b, "", "  ") == nil {
		b = append(pretty.Bytes(), '\n')
	}
	_, err = out.Write(b)
	return err
}

const sessionUsage = `usage: agentwire session create --core URL --kind KIND [--environment ENV]
       agentwire session get --core URL ID
A Session that works in a workspace names a registered Environment of its project
(agentwire env create --device D prints its ID); without --environment it has none.`

func runSession(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "create" && args[0] != "get") {
		fmt.Fprintln(stderr, sessionUsage)
		return errUsage
	}
	fs := newFlags("session "+args[0], stderr)
	core := fs.String("core", "", "Core's base URL")
	kind := fs.String("kind", "", "agent kind (create)")
	environment := fs.String("environment", "", "a registered Environment's ID (create; agentwire env create prints it)")
	envType := fs.String("env", "", "gone: use --environment ENV (a registered Environment), or nothing for a Session without a workspace")
	binding := fs.String("binding", "", "gone: a Session never chooses its binding; register the workspace with agentwire env create")
	initf := addInitFlags(fs) // gone here: the initialization belongs to env create
	if err := fs.Parse(args[1:]); err != nil {
		return errUsage
	}
	switch {
	case *binding != "":
		return errors.New("--binding is gone: a Session never chooses its binding; register the workspace (agentwire env create --device D) and pass --environment ID")
	case *envType != "" && *envType != "none":
		return fmt.Errorf("--env %s is gone: register the workspace (agentwire env create --device D) and pass --environment ID", *envType)
	case *envType == "none" && *environment != "":
		return errors.New("--env none and --environment contradict each other: a Session with a registered Environment works in its workspace")
	case len(initf.env) > 0 || len(initf.files) > 0:
		return errors.New("--init-env and --init-file belong to the Environment now: agentwire env create --device D --init-env K=V --init-file LOCAL=/workspace/PATH")
	}
	c, err := newAPIClient(*core)
	if err != nil {
		return err
	}
	if args[0] == "get" {
		if fs.NArg() != 1 {
			return errUsage
		}
		return c.call("GET", "/api/v1/sessions/"+fs.Arg(0), nil, stdout)
	}
	if fs.NArg() != 0 {
		return errUsage
	}
	body := map[string]any{"agent_kind": *kind}
	if *environment != "" {
		body["environment_id"] = *environment
	}
	return c.call("POST", "/api/v1/sessions", body, stdout)
}

const turnUsage = `usage: agentwire turn submit --core URL --session S TEXT
       agentwire turn run --core URL --session S [--approve-all] TEXT
                 (streams events, asks the Turn's questions on the terminal; exit 0 only when completed)
       agentwire turn status --core URL TURN
       agentwire turn cancel --core URL TURN`

// stdin is where `turn run` reads the answers to a Turn's questions.
var stdin io.Reader = os.Stdin

func runTurn(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || !oneOf(args[0], "submit", "run", "status", "cancel") {
		fmt.Fprintln(stderr, turnUsage)
		return errUsage
	}
	fs := newFlags("turn "+args[0], stderr)
	core := fs.String("core", "", "Core's base URL")
	session := fs.String("session", "", "Session ID (submit)")
	approveAll := fs.Bool("approve-all", false, "run: approve every permission request without asking (user-choice questions are still asked)")
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 1 {
		return errUsage
	}
	c, err := newAPIClient(*core)
	if err != nil {
		return err
	}
	switch args[0] {
	case "status":
		return c.call("GET", "/api/v1/turns/"+fs.Arg(0), nil, stdout)
	case "cancel":
		return c.call("POST", "/api/v1/turns/"+fs.Arg(0)+"/cancel", nil, stdout)
	case "run":
		if *session == "" {
			return errors.New("--session is required")
		}
		p := &prompter{in: bufio.NewReader(stdin), out: stderr, approveAll: *approveAll}
		return c.runTurnRun(*session, fs.Arg(0), stdout, p)
	}
	input := []any{map[string]any{"content": []any{map[string]any{"type": "input_text", "text": fs.Arg(0)}}}}
	return c.call("POST", "/api/v1/sessions/"+*session+"/turns", map[string]any{"input": input}, stdout)
}

func runDevices(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("devices", stderr)
	core := fs.String("core", "", "Core's base URL")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		return errUsage
	}
	c, err := newAPIClient(*core)
	if err != nil {
		return err
	}
	return c.call("GET", "/api/v1/devices", nil, stdout)
}

func oneOf(s string, set ...string) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}
