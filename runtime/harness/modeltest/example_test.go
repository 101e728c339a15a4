package modeltest_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentwire/agentwire/runtime/harness/modeltest"
)

// A test scripts two turns and calls the Responses API itself. A test
// that runs a CLI points it at srv.OpenAIBaseURL() or srv.URL() instead.
func Example() {
	// In a test: srv := modeltest.New(t, ...), closed by t.Cleanup.
	srv, err := modeltest.Start(modeltest.WithTurns(
		modeltest.Reply(modeltest.Reasoning("Greet."), modeltest.Text("Hi ", "there.")),
		modeltest.Reply(modeltest.CodexExec("ls")),
	))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	body := `{"model":"gpt-5.5","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Say hi"}]}]}`
	resp, err := srv.Client().Post(srv.OpenAIBaseURL()+"/responses", "application/json", strings.NewReader(body))
	if err != nil {
		fmt.Println(err)
		return
	}
	events, err := modeltest.ReadEvents(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ev := range events {
		var delta struct{ Delta string }
		if ev.Name == "response.output_text.delta" && ev.Decode(&delta) == nil {
			fmt.Printf("delta %q\n", delta.Delta)
		}
	}
	fmt.Println("last event:", events[len(events)-1].Name)

	r, err := srv.Await(context.Background(), 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("the model was asked:", r.LastUserText())
	fmt.Println("turns left:", srv.Pending())
	// Output:
	// delta "Hi "
	// delta "there."
	// last event: response.completed
	// the model was asked: Say hi
	// turns left: 1
}

// A test holds a stream half-way, checks what the CLI shows, then lets
// the model finish; no clock is involved.
func ExampleHold() {
	var t *testing.T // the test's own
	gate := modeltest.NewGate()
	srv := modeltest.New(t, modeltest.WithTurns(modeltest.Reply(
		modeltest.Text("Working"), modeltest.Hold(gate), modeltest.Text(" done."),
	)))
	_ = srv // point the CLI at srv.URL() and start a turn
	<-gate.Reached()
	// ... assert the CLI reported the delta "Working", or interrupt it ...
	gate.Open()
}

// A script can answer from the request: here a Codex tool round, then the
// tool's output quoted back.
func ExampleOnToolResult() {
	var t *testing.T // the test's own
	srv := modeltest.New(t,
		modeltest.WithTurns(modeltest.Reply(modeltest.CodexExecEscalated("echo proof > proof.txt", "write the proof"))),
		modeltest.WithResponders(modeltest.OnToolResult(func(tr modeltest.ToolResult) modeltest.Turn {
			if tr.IsError {
				return modeltest.Reply(modeltest.Text("The command failed."))
			}
			return modeltest.Reply(modeltest.Text("It printed: " + tr.Output))
		})),
	)
	_ = srv
}

// The errors a provider answers with, for the classification tests.
func ExampleFail() {
	var t *testing.T // the test's own
	srv := modeltest.New(t, modeltest.WithTurns(
		modeltest.Fail(http.StatusTooManyRequests, ""), // 429 rate limit, in the provider's shape
		modeltest.ContextLengthExceeded(),
		modeltest.Reply(modeltest.Text("partial"), modeltest.Drop()), // a connection cut mid-stream
	))
	_ = srv
}
