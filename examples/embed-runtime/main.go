// Command embed-runtime is an agentwire Runtime whose own Harness, "shout", streams a Turn's words upper-cased.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// shout is the Harness and its Executor. Every Turn needs EveryTurn, steering (its Inbox) among them; a Session
// with no Environment and no subagents adds the other two. Words steered in are shouted before the Turn ends.
type shout struct{ harness.Inbox }

func (*shout) Declaration() harness.Declaration {
	caps := harness.MustSupport(append(harness.EveryTurn(), "environment_none", "subagent_control")...)
	return harness.Declaration{Kind: "shout", Available: true, Version: "1.0.0", Capabilities: caps}
}

func (*shout) NewExecutor(context.Context, harness.ExecutorConfig) (harness.Executor, error) {
	return &shout{}, nil
}
func (*shout) Close(context.Context) error { return nil }

func (s *shout) Run(ctx context.Context, t harness.Turn, emit harness.Emit) (wire.Done, error) {
	s.Begin(t)
	defer s.End()
	words, out := strings.Fields(t.Input.Text()), ""
	for len(words) > 0 || !s.Finish() {
		words = append(words, strings.Fields(s.Take().Text())...)
		for ; len(words) > 0; words = words[1:] {
			d := strings.Repeat(" ", min(len(out), 1)) + strings.ToUpper(words[0])
			if err := emit(ctx, wire.Delta{Delta: d}); err != nil {
				return wire.Done{}, err
			}
			out += d
		}
	}
	return wire.Done{Content: out}, nil
}

func main() {
	core := flag.String("core", "http://127.0.0.1:8080", "Core's base URL")
	device := flag.String("device-id", "", "this Runtime's device ID")
	credFile := flag.String("credential-file", "", "the file holding the device credential")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := daemon.Run(ctx, daemon.Config{CoreURL: *core, DeviceID: *device, CredentialFile: *credFile,
		Harnesses: []harness.Adapter{&shout{}}, Version: "shout-runtime/1.0.0"}); err != nil {
		log.Fatal(err)
	}
}
