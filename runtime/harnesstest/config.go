// Package harnesstest is the Harness conformance kit: a test any adapter,
// ours or a third party's, runs against itself.
//
//	report := harnesstest.Run(t, harnesstest.Config{Adapter: a, Default: arrange})
//
// Run reads the adapter's declaration and, for every capability declared
// true, runs that capability's acceptance scenario through the
// harness.Adapter and harness.Executor interfaces the daemon uses; for every
// capability declared false it checks that the operation is refused before
// any native call (daemon-protocol.txt:27). The shared text assertions
// always run. Then the same adapter runs end to end through the real daemon
// (runtime/daemon) against a scripted Core over a WebSocket, with the
// contract runner of peer/scenario: a streaming Turn, a cancellation, the
// next Turn of a Session, permissions approved and denied, steered input
// with its receipts, a function call and its result, an error followed by
// done (daemon_interact.go), the workspace profiles the daemon serves for
// it, and the refusals (daemon.go).
//
// The kit does not know the adapter's native side. For each scenario it
// describes what the native side must do (a Plan) and calls the adapter's
// Hook, which makes the native side do it on the next Turn: a script-driven
// adapter sets the next Turn's script, a real CLI adapter scripts its model
// endpoint, a program driven by its input gets the input that makes it do
// so. A declared capability whose scenario fails is a failing test, and so
// is a scenario no hook serves: never a skip. The HTTP MCP servers of the
// mcp_http_* scenarios are the kit's own (mcp.go): MCP is an open protocol,
// so the hook only makes the model call the tool, and the kit's server
// tells what ran and with which credential.
//
// No fixed sleep or wall-clock wait decides anything: every wait is on a
// channel, bounded by Config.Timeout only so that a hung adapter fails
// instead of hanging the test.
package harnesstest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// Config configures one run of the kit.
type Config struct {
	// Adapter is the adapter under test. Its declaration must be valid and
	// available.
	Adapter harness.Adapter
	// Hooks makes the native side ready for a scenario, by the capability
	// the scenario proves (its JSON name, Scenario.Capability) or by one of
	// the behaviours below ("text", "cancellation", "thinking",
	// "user_choice", "withdrawal"). Default serves every scenario without
	// an entry of its own. A scenario neither serves fails.
	Hooks   map[string]Hook
	Default Hook
	// Behaviours no capability field names, decided explicitly like a
	// declaration: a true one's scenario runs (and needs a hook), a false
	// one is checked never to happen.
	//
	// Thinking: the Harness reports reasoning as thinking frames.
	Thinking bool
	// UserChoice: it asks prompt_for_user_choice questions (answered
	// through the permissions gate).
	UserChoice bool
	// Withdrawal: it withdraws its own permission requests
	// (harness.Withdrawal, permission_cancel).
	Withdrawal bool
	// NativeCalls, when set, counts the native operations the adapter has
	// started so far (processes, model requests, scripts played): every
	// refusal is then also checked to start none. A refused configuration
	// is counted from before NewExecutor; refused input (an image Run or
	// Steer cannot carry) from after the preparation, which ran before the
	// input existed.
	NativeCalls func() int
	// Configure adjusts the configuration of every Turn before the
	// scenario sets what it needs (a model, provider options).
	Configure func(*wire.PromptRequest)
	// Timeout bounds each Turn and each wait of the kit (60 s when zero):
	// a failure bound, never a wait the test relies on.
	Timeout time.Duration
	// NoDaemon leaves out the run through the real daemon (daemon.go); the
	// workspace capabilities, which the daemon serves, are then reported as
	// not run, which fails.
	NoDaemon bool
}

// Hook makes the adapter's native side ready for s's Turn. It reads
// s.Plan; it may replace s.Input when its native side is driven by its
// input (keeping what the scenario needs, the image of an image scenario
// say), add native options to s.Config (never remove what the scenario
// set), and set s.Verify to check what only the native side can tell. It
// fails t when it cannot make its native side follow the plan.
type Hook func(t *testing.T, s *Scenario)

// Scenario is one Turn a scenario runs.
type Scenario struct {
	// Name is the scenario ("permissions/deny"); Capability the field or
	// behaviour it proves ("permissions").
	Name       string
	Capability string
	// Plan is what the native side must do in the Turn, in order.
	Plan Plan
	// Input is what the kit sends.
	Input wire.MessageInput
	// Config is the configuration the Executor is prepared with.
	Config wire.PromptRequest
	// SessionID and WorkspaceDir are the ExecutorConfig's.
	SessionID    string
	WorkspaceDir string
	// Verify, set by the hook, checks after the Turn what only the native
	// side knows (the model saw the approval, the CLI ran without web
	// search). Scenarios whose effect is native only require it.
	Verify func(t *testing.T, r *Result)
	// Refused says the kit expects the Turn never to play its plan: a
	// configuration refused before any native call, or a strict resume of
	// a native Session that does not exist, or a required HTTP MCP server
	// that is down, which fail finitely (natively, for a Harness that owns
	// its native Sessions or connects to the server itself). The hook need not
	// arrange the plan, and a hook whose native side would wait for a Turn
	// that never comes should not.
	Refused bool
}

// Plan is what the native side does in one Turn, step by step.
type Plan []Step

// Step is one thing the native side does; exactly one member is set.
type Step struct {
	// Say is assistant text, streamed in order as one native message; the
	// native side may cut it differently, but the deltas joined are Say
	// joined, byte for byte.
	Say []string
	// Think is reasoning text, reported as thinking frames.
	Think string
	// Echo answers with the Turn's input as the native side received it:
	// every text part in order (and, where the Harness carries images,
	// each image's URL in its place).
	Echo bool
	// Tool runs one tool and reports it (tool_call before and after, with
	// the observation when Core opts in).
	Tool *Tool
	// Ask asks permission to run a tool; the answer decides what follows
	// (Approve says what the kit answers).
	Ask *Ask
	// Withdraw asks permission and withdraws the request itself.
	Withdraw *Ask
	// Choice asks the user questions; the native side then says the
	// labels it was given.
	Choice *Choice
	// Call calls a declared function; the native side then says the text
	// of the result it got.
	Call *Call
	// MCP calls a tool of one of the Turn's HTTP MCP servers (the kit
	// serves them, mcp.go); the native side then says the text of the
	// result it got, unless the tool is outside the server's
	// allowed_tools. A Harness that asks permission for the call is
	// approved.
	MCP *MCPCall
	// AwaitInput takes one active input and says its text.
	AwaitInput bool
	// Usage reports these cumulative snapshots, in order.
	Usage []wire.Usage
	// JSON answers with this JSON document as the structured output.
	JSON string
	// Fail reports a native error with this text; the Turn then ends.
	Fail string
	// Hang waits until the Turn is cancelled.
	Hang bool
}

// Tool is a tool the native side runs.
type Tool struct {
	Name string
	Args json.RawMessage
}

// Ask is a permission question.
type Ask struct {
	// Tool is the tool that waits for permission.
	Tool string
	// Approve is the kit's answer.
	Approve bool
}

// Choice is a user-choice question set and the kit's answers.
type Choice struct {
	Questions []wire.UserChoiceQuestion
	// Answers are the labels the kit answers, by question ID.
	Answers map[string][]string
}

// Call is a function call and the result the kit returns.
type Call struct {
	Name string
	Args json.RawMessage
	// Result is the result's content.
	Result []wire.InputContent
}

// Text is the text a plan says, in order: its Say steps joined.
func (p Plan) Text() string {
	var out string
	for _, s := range p {
		for _, x := range s.Say {
			out += x
		}
	}
	return out
}
