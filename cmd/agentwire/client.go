package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// The public API's CLI wrappers. The API key comes from AGENTWIRE_API_KEY
// and travels only in the Authorization header, never in a URL or a flag
// (flags show up in process listings).

type apiClient struct {
	base, key string
	jsonLines bool // followed Turns print JSON Lines (--json)
}

func newAPIClient(core string) (*apiClient, error) {
	key := os.Getenv("AGENTWIRE_API_KEY")
	if key == "" {
		return nil, errors.New("set AGENTWIRE_API_KEY to a project API key")
	}
	base, err := coreBase(core)
	if err != nil {
		return nil, err
	}
	return &apiClient{base: base, key: key}, nil
}

// callID is call for a request that creates a record, printing only the
// new record's ID (the --quiet of the create commands).
func (c *apiClient) callID(method, path string, body any, out io.Writer) error {
	var b bytes.Buffer
	if err := c.call(method, path, body, &b); err != nil {
		return err
	}
	var rec struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b.Bytes(), &rec); err != nil || rec.ID == "" {
		return fmt.Errorf("%s %s answered no id: %s", method, path, strings.TrimSpace(b.String()))
	}
	_, err := fmt.Fprintln(out, rec.ID)
	return err
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
		return apiError(method, c.base+path, resp.Status, resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, b, "", "  ") == nil {
		b = append(pretty.Bytes(), '\n')
	}
	_, err = out.Write(b)
	return err
}

// apiError is a non-2xx answer as an error naming the full URL tried, so
// a wrong --core base shows where the request really went. A 404 that is
// not one of Core's JSON errors came from no route of Core's API: the
// base is then the likely mistake, and the error says so.
//
// A refusal by a quota (429 quota_exceeded) says which quota, its limit
// and when to retry (retryAfter, the Retry-After header, when known), in
// words before the API's body.
func apiError(method, fullURL, status string, code int, body []byte, retryAfter ...string) error {
	text := strings.TrimSpace(string(body))
	var apiErr struct {
		Error  string  `json:"error"`
		Quota  string  `json:"quota"`
		Limit  float64 `json:"limit"`
		Detail string  `json:"detail"`
	}
	if code == http.StatusTooManyRequests && json.Unmarshal(body, &apiErr) == nil && apiErr.Quota != "" {
		when := "later"
		if len(retryAfter) > 0 && retryAfter[0] != "" {
			when = "in " + retryAfter[0] + " s"
		}
		return fmt.Errorf("%s %s: %s: the project's %s quota (limit %s) refused it: %s; retry %s\n%s",
			method, fullURL, status, apiErr.Quota, strconv.FormatFloat(apiErr.Limit, 'f', -1, 64), apiErr.Detail, when, text)
	}
	err := fmt.Errorf("%s %s: %s: %s", method, fullURL, status, text)
	if code == http.StatusNotFound && (json.Unmarshal(body, &apiErr) != nil || apiErr.Error == "") {
		return fmt.Errorf("%w\nno API answers at that URL: --core (or %s) must be Core's base URL, for example http://127.0.0.1:8080", err, CoreEnv)
	}
	return err
}

const sessionUsage = `usage: agentwire session <command> [flags] ...

commands:
  create   create a Session of the project, in a registered Environment's workspace or without one
  get      print a Session

Run "agentwire session <command> -h" for one command's flags and examples.`

var sessionCommands = map[string]subcommand{
	"create": {use: "session create [flags]", about: "Creates a Session of the project (AGENTWIRE_API_KEY) and prints it as JSON. A Session that works in a\n" +
		"workspace names a registered Environment (agentwire env create --device D prints its ID).",
		examples: []string{"agentwire session create --kind script", "agentwire session create --kind codex --environment ENV",
			"agentwire session create --agent AGENT --environment ENV"}},
	"get": {use: "session get [flags] SESSION", about: "Prints the Session as JSON.",
		examples: []string{"agentwire session get SESSION"}},
}

func runSession(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, sessionUsage)
		return errUsage
	}
	if oneOf(args[0], "-h", "--help", "help") {
		fmt.Fprintln(stdout, sessionUsage)
		return nil
	}
	cmd, ok := sessionCommands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "agentwire session: unknown command %q\n\n%s\n", args[0], sessionUsage)
		return errUsage
	}
	fs := cmd.flags(stderr)
	core := fs.String("core", "", "Core's base URL (default $AGENTWIRE_CORE)")
	var kind, agentID, environment, envType, binding *string
	var initf *initFlags
	quiet := new(bool)
	if args[0] == "create" {
		kind = fs.String("kind", "", "the agent kind the Session runs (required without --agent; a device of the project must declare it)")
		agentID = fs.String("agent", "", "an Agent of the project (agentwire agent create prints its ID): the Session runs its current version")
		environment = fs.String("environment", "", "a registered Environment's ID (agentwire env create prints it)")
		envType = fs.String("env", "", "gone: use --environment ENV (a registered Environment), or nothing for a Session without a workspace")
		binding = fs.String("binding", "", "gone: a Session never chooses its binding; register the workspace with agentwire env create")
		initf = addInitFlags(fs) // gone here: the initialization belongs to env create
		quiet = fs.Bool("quiet", false, "print only the new Session's ID, for SES=$(agentwire session create -quiet ...)")
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return flagsDone(err)
	}
	if args[0] == "get" {
		if fs.NArg() != 1 {
			return usageError(fs, "want one SESSION, got %d arguments", fs.NArg())
		}
		c, err := newAPIClient(*core)
		if err != nil {
			return usageError(fs, "%v", err)
		}
		return c.call("GET", "/api/v1/sessions/"+url.PathEscape(fs.Arg(0)), nil, stdout)
	}
	switch {
	case fs.NArg() != 0:
		return usageError(fs, "session create takes no arguments, got %q", fs.Args())
	case *binding != "":
		return errors.New("--binding is gone: a Session never chooses its binding; register the workspace (agentwire env create --device D) and pass --environment ID")
	case *envType != "" && *envType != "none":
		return fmt.Errorf("--env %s is gone: register the workspace (agentwire env create --device D) and pass --environment ID", *envType)
	case *envType == "none" && *environment != "":
		return errors.New("--env none and --environment contradict each other: a Session with a registered Environment works in its workspace")
	case len(initf.env) > 0 || len(initf.files) > 0:
		return errors.New("--init-env and --init-file belong to the Environment now: agentwire env create --device D --init-env K=V --init-file LOCAL=/workspace/PATH")
	case *kind == "" && *agentID == "":
		return usageError(fs, "--kind or --agent is required")
	}
	c, err := newAPIClient(*core)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	body := map[string]any{}
	if *kind != "" {
		body["agent_kind"] = *kind
	}
	if *agentID != "" {
		body["agent_id"] = *agentID
	}
	if *environment != "" {
		body["environment_id"] = *environment
	}
	if *quiet {
		return c.callID("POST", "/api/v1/sessions", body, stdout)
	}
	return c.call("POST", "/api/v1/sessions", body, stdout)
}

// devicesCommand is `agentwire devices [list] | devices revoke DEVICE`:
// the project's devices through the public API.
var devicesCommand = subcommand{use: "devices [list] [flags] | devices revoke [flags] DEVICE",
	about: "Lists the project's devices (the administration key: every device), each with its connection\n" +
		"and the agent kinds it declares: a table, or the API's JSON (with capabilities) with --json. revoke revokes every credential of one of the project's devices:\n" +
		"its Runtime is disconnected at its next heartbeat and stops (Core's administrator can also\n" +
		"run agentwire core device revoke --data DIR --device D on Core's machine).",
	examples: []string{"agentwire devices", "agentwire devices list --json --core 127.0.0.1:8080", "agentwire devices revoke dev-1"}}

func runDevices(args []string, stdout, stderr io.Writer) error {
	fs := devicesCommand.flags(stderr)
	core := fs.String("core", "", "Core's base URL (default $AGENTWIRE_CORE)")
	asJSON := fs.Bool("json", false, "list: print the API's JSON instead of a table")
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	pos := fs.Args()
	revoke := false
	switch {
	case len(pos) > 0 && pos[0] == "list":
		pos = pos[1:]
		if len(pos) != 0 {
			return usageError(fs, "devices list takes no arguments, got %q", pos)
		}
	case len(pos) > 0 && pos[0] == "revoke":
		if len(pos) != 2 {
			return usageError(fs, "devices revoke takes one DEVICE, got %d arguments", len(pos)-1)
		}
		revoke = true
	case len(pos) > 0:
		return usageError(fs, "unknown command %q (devices takes list or revoke)", pos[0])
	}
	c, err := newAPIClient(*core)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	if revoke {
		return c.call("POST", "/api/v1/devices/"+url.PathEscape(pos[1])+"/revoke", nil, stdout)
	}
	return c.listTable("/api/v1/devices", "devices", deviceColumns, *asJSON, stdout)
}

func oneOf(s string, set ...string) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}
