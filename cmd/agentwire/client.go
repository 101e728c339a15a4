package main

import (
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
	base, err := coreBase(core)
	if err != nil {
		return nil, err
	}
	return &apiClient{base: base, key: key}, nil
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
	core := fs.String("core", "", "Core's base URL (default $AGENTWIRE_CORE)")
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

func runDevices(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("devices", stderr)
	core := fs.String("core", "", "Core's base URL (default $AGENTWIRE_CORE)")
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
