// Command embed-runtime is a complete agentwire Runtime with its own Harness, kind "shout": a Turn
// streams its input upper-cased, a delta a word, with the words steered into it while it runs.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// shout is the Harness. Every Turn needs EveryTurn; a Session with no Environment and no subagents adds the other two.
type shout struct{}

func (shout) Declaration() harness.Declaration {
	caps := harness.MustSupport(append(harness.EveryTurn(), "environment_none", "subagent_control")...)
	return harness.Declaration{Kind: "shout", Available: true, Version: "1.0.0", Capabilities: caps}
}

func (shout) NewExecutor(context.Context, harness.ExecutorConfig) (harness.Executor, error) {
	return &loud{}, nil
}

// loud is the Executor: turn is the Turn running, words what it has to shout.
type loud struct {
	mu    sync.Mutex
	turn  *harness.Turn
	words []string
}

func (l *loud) Run(ctx context.Context, t harness.Turn, emit harness.Emit) (wire.Done, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer func() { l.turn = nil }() // under the lock: a word Steer added is always shouted
	l.turn, l.words = &t, strings.Fields(t.Input.Text())
	for i := 0; i < len(l.words); i++ {
		d := strings.Repeat(" ", min(i, 1)) + strings.ToUpper(l.words[i])
		l.mu.Unlock() // Steer may add words while a delta goes out
		err := emit(ctx, wire.Delta{Delta: d, Sequence: uint64(i)})
		if l.mu.Lock(); err != nil {
			return wire.Done{}, err
		}
	}
	return wire.Done{Content: strings.ToUpper(strings.Join(l.words, " "))}, nil
}

// Steer takes active input, which every Turn must: its words are shouted (accepted) once written.
func (l *loud) Steer(_ context.Context, runID, inputID string, in wire.MessageInput) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.turn == nil || l.turn.RunID != runID {
		return harness.ErrRunInactive
	}
	l.words = append(l.words, strings.Fields(in.Text())...)
	if l.turn.Notify != nil {
		l.turn.Notify(harness.InputNotice{InputID: inputID, Accepted: true})
	}
	return nil
}

func (l *loud) Close(context.Context) error { return nil }

func main() {
	core := flag.String("core", "http://127.0.0.1:8080", "Core's base URL")
	device := flag.String("device-id", "", "this Runtime's device ID")
	credFile := flag.String("credential-file", "", "the file holding the device credential")
	flag.Parse()
	secret, err := os.ReadFile(*credFile)
	reg := harness.NewRegistry()
	if err == nil {
		err = reg.Register(shout{})
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err == nil {
		cfg := daemon.Config{CoreURL: *core, DeviceID: *device, Credential: daemon.NewCredential(string(secret)), Registry: reg}
		err = daemon.Run(ctx, cfg)
	}
	if err != nil {
		log.Fatal(err)
	}
}
