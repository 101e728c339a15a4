package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/runtime/harness/install"
	"github.com/agentwire/agentwire/runtime/harness/modeltest"
	"github.com/agentwire/agentwire/wire"
)

// `agentwire demo --harness codex|claude`: the same Core, Runtime and Turn
// as the echo demo, with the Runtime running a real CLI (the pinned one
// that make harnesses installs) through `--harness codex` or `--harness
// claude` (realCLIs says what differs between them). The model is
// the scripted endpoint of runtime/harness/modeltest, started in this
// process on 127.0.0.1, so nothing leaves the machine and no account is
// needed.
//
// The script, chosen from each request the CLI sends (each asks the model
// once per sampling step of the Turn; Claude Code takes the active input
// after the held step's result, as a follow-up of the same Turn):
//
//   - the first request (the prompt): a reasoning summary, a streamed
//     sentence, then Codex's exec_command with sandbox_permissions
//     require_escalated, which Codex turns into an approval the demo
//     grants through the API; the command then really runs in the
//     workspace and writes demoProofFile;
//   - the request carrying the command's result: a streamed sentence
//     ending in demoCodexHeldDelta, then the stream is held
//     (modeltest.Hold). The demo sends its active input when that delta
//     reaches the Turn's event stream, so the input arrives mid-answer
//     while the Turn is certainly active, whatever the machine's speed;
//     the stream resumes once the Runtime wrote the input to Codex, and
//     Codex consumes the input when that step ends (accepted);
//   - the request carrying the active input: the closing answer.
//
// decision: the hold is released by the Runtime's prompt_steer_ack
// (written) in Core's own frame transcript, which the demo already asks
// Core to write; the public API reports only the input's final outcome,
// and that (accepted) comes after the stream it would have to release.
// That is the order the adapter's own steering test uses (Steer returned,
// then the gate opens).

const (
	// demoCodexKeyEnv names the variable the Runtime reads the provider's
	// key from (--codex-key-env); the key itself is never on a command
	// line. The scripted endpoint takes any key: this one is a dummy.
	demoCodexKeyEnv = "AGENTWIRE_DEMO_CODEX_KEY"
	demoCodexKey    = "sk-agentwire-demo-offline-dummy"
	// demoCodexModel is a model Codex knows, so it loads real metadata
	// and prints no unknown-model warning.
	demoCodexModel = "gpt-5.5"
	// demoProofFile is what the approved command writes in the workspace.
	demoProofFile    = "proof.txt"
	demoProofText    = "written by the agent in the agentwire demo"
	demoCodexCommand = "echo '" + demoProofText + "' > " + demoProofFile + " && echo wrote " + demoProofFile
	demoCodexSteer   = "also say which file you wrote"
	// demoCodexHeldDelta is the last delta before the model's stream is
	// held for the active input.
	demoCodexHeldDelta = "and wrote " + demoProofFile + ". "
)

// realCLI is what differs between the real CLIs the demo can run: how the
// binary is found, which API of the scripted endpoint it talks to, how it
// runs a shell command that needs approval, and the Runtime's flags.
type realCLI struct {
	kind, model, keyEnv, key string
	binary                   func() (string, error)
	baseURL                  func(*modeltest.Server) string
	command                  func(cmd, why string) modeltest.Part
	flags                    func(baseURL, state string) []string
}

// realCLIs are the CLIs `agentwire demo --harness` runs besides echo.
var realCLIs = map[string]realCLI{
	"codex": {kind: "codex", model: demoCodexModel, keyEnv: demoCodexKeyEnv, key: demoCodexKey,
		binary: func() (string, error) {
			return installed(install.Codex, "Codex", install.CodexPackage, install.CodexVersion, "codex")
		},
		baseURL: func(s *modeltest.Server) string { return s.OpenAIBaseURL() },
		// exec_command with sandbox_permissions require_escalated, which
		// Codex turns into an approval.
		command: modeltest.CodexExecEscalated,
		flags: func(baseURL, state string) []string {
			return []string{"--codex-model", demoCodexModel, "--codex-base-url", baseURL, "--codex-key-env", demoCodexKeyEnv, "--codex-state", state}
		}},
	"claude": {kind: "claude", model: "scripted-model", keyEnv: demoClaudeKeyEnv, key: demoClaudeKey,
		binary: func() (string, error) {
			return installed(install.Claude, "Claude Code", install.ClaudePackage, install.ClaudeVersion, "claude")
		},
		baseURL: func(s *modeltest.Server) string { return s.URL() },
		// Bash writing a file: Claude Code asks before running it.
		command: modeltest.ClaudeBash,
		flags: func(baseURL, state string) []string {
			return []string{"--claude-model", "scripted-model", "--claude-base-url", baseURL, "--claude-key-env", demoClaudeKeyEnv, "--claude-state", state}
		}},
}

const (
	demoClaudeKeyEnv = "AGENTWIRE_DEMO_CLAUDE_KEY"
	demoClaudeKey    = "sk-ant-agentwire-demo-offline-dummy"
)

// installed is the pinned CLI's binary, or one line saying how to install it.
func installed(find func() (string, error), name, pkg, version, kind string) (string, error) {
	p, err := find()
	if errors.Is(err, install.ErrNotInstalled) {
		return "", fmt.Errorf("demo --harness %s: the %s CLI (%s %s) is not installed: run make harnesses", kind, name, pkg, version)
	}
	return p, err
}

// realHarness starts the scripted model endpoint and describes the
// Runtime's --harness flags for the CLI cli.
func (d *demo) realHarness(cli realCLI, bin string) (*demoHarness, error) {
	gate := modeltest.NewGate()
	srv, err := modeltest.Start(modeltest.WithFallback(demoScript(gate, cli.command)))
	if err != nil {
		return nil, err
	}
	// Closing the endpoint ends a held stream too.
	d.closers = append(d.closers, srv.Close, gate.Open)
	d.red.add(cli.key)
	d.say("scripted model endpoint (runtime/harness/modeltest) at %s; the real %s CLI %s", cli.baseURL(srv), cli.kind, bin)
	frames := d.framesPath()
	return &demoHarness{
		kind:    cli.kind,
		flags:   append([]string{"--harness", cli.kind + "=" + bin}, cli.flags(cli.baseURL(srv), filepath.Join(d.tmp, cli.kind))...),
		env:     []string{cli.keyEnv + "=" + cli.key},
		diagram: cli.kind + ", the real CLI",
		about:   "--harness " + cli.kind + " (model " + cli.model + ", key from $" + cli.keyEnv + ")",
		prompt:  "Write " + demoProofFile + " in the workspace, then wait for my next message.",
		steer:   demoCodexSteer,
		steerOn: func(event, payload string) bool {
			return event == "delta" && strings.Contains(payload, `"delta":"`+demoCodexHeldDelta+`"`)
		},
		steered: func() {
			go func() {
				defer gate.Open()
				if d.awaitSteerAck(frames, demoInputID) {
					d.say("  model the Runtime answered the input (prompt_steer_ack): the scripted model resumes its held stream")
				}
			}()
		},
		after: d.showProof,
	}, nil
}

// demoScript answers each request of the Turn (see the file comment);
// command is the CLI's shell command that needs approval.
func demoScript(gate *modeltest.Gate, command func(cmd, why string) modeltest.Part) modeltest.Responder {
	return func(r *modeltest.Request) modeltest.Turn {
		if slices.Contains(r.UserTexts(), demoCodexSteer) {
			return modeltest.Reply(modeltest.Text("You also asked which file: ", "I wrote "+demoProofFile+" ", "in the workspace. ", "Done."))
		}
		if _, ok := r.LastToolResult(); ok {
			return modeltest.Reply(
				modeltest.Text("The command ran ", demoCodexHeldDelta),
				modeltest.Hold(gate),
				modeltest.Text("Waiting for your next message."),
			)
		}
		return modeltest.Reply(
			modeltest.Reasoning("The user ", "wants a file ", "in the workspace."),
			modeltest.Text("I will ", "write "+demoProofFile+" ", "with a shell command."),
			command(demoCodexCommand, "write "+demoProofFile+" in the workspace"),
		)
	}
}

// awaitSteerAck follows Core's frame transcript until the Runtime wrote
// inputID to Codex (prompt_steer_ack written, or already accepted) or
// refused it for good, or the demo ends. A retryable refusal (not_ready,
// busy) keeps the hold: Core sends the input again. The file is
// appended one whole line per frame; it is read from where the last look
// stopped.
func (d *demo) awaitSteerAck(frames, inputID string) bool {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var off int64
	var pending []byte
	for {
		if f, err := os.Open(frames); err == nil {
			if _, err := f.Seek(off, io.SeekStart); err == nil {
				b, _ := io.ReadAll(f)
				off += int64(len(b))
				pending = append(pending, b...)
			}
			f.Close()
		}
		for {
			i := bytes.IndexByte(pending, '\n')
			if i < 0 {
				break
			}
			line := pending[:i]
			pending = pending[i+1:]
			if steerAckFor(line, inputID) {
				return true
			}
		}
		select {
		case <-d.ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

func steerAckFor(line []byte, inputID string) bool {
	var l gateway.TranscriptLine
	var env wire.Envelope
	if json.Unmarshal(line, &l) != nil || l.Dir != "in" || json.Unmarshal(l.Frame, &env) != nil || env.Type != wire.TypePromptSteerAck {
		return false
	}
	var ack wire.PromptSteerAck
	return json.Unmarshal(env.Payload, &ack) == nil && ack.InputID == inputID && ack.DriveKey() != "" && !ack.Retryable()
}

// showProof reads the approved command's file back through the public
// files API (Core asks the Runtime, which reads the workspace) and checks
// the active input was accepted.
func (d *demo) showProof(c *apiClient, sessionID string) error {
	q := url.Values{"path": {demoProofFile}, "max_bytes": {"4096"}}
	var f struct {
		Data      []byte `json:"data"`
		Truncated bool   `json:"truncated"`
	}
	t0 := time.Now()
	if err := d.call(c, "GET", "/api/v1/sessions/"+url.PathEscape(sessionID)+"/files/content?"+q.Encode(), nil, &f); err != nil {
		return fmt.Errorf("read %s from the workspace: %w", demoProofFile, err)
	}
	d.api(t0, "GET files/content?path="+demoProofFile+" → "+fmt.Sprint(len(f.Data))+" bytes")
	d.say("\nthe workspace's %s, read back through the files API: %q", demoProofFile, string(f.Data))
	if strings.TrimSpace(string(f.Data)) != demoProofText {
		return fmt.Errorf("the approved command's %s holds %q, want %q", demoProofFile, f.Data, demoProofText+"\n")
	}
	for _, in := range d.inputs {
		if strings.Contains(in, `"input_id":"`+demoInputID+`"`) && strings.Contains(in, `"outcome":"accepted"`) {
			return nil
		}
	}
	return fmt.Errorf("the active input %s was not accepted: %v", demoInputID, d.inputs)
}
