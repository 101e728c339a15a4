package daemon_test

import (
	"context"
	"log"
	"os"
	"os/signal"

	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/runtime/harness"
)

// A Runtime serving one Harness until interrupted. The script adapter
// stands in for your own harness.Adapter (examples/embed-runtime writes
// one); the credential file is what `agentwire core credential issue
// --kind device --device dev-1` printed.
func ExampleRun() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := daemon.Run(ctx, daemon.Config{
		CoreURL:        "http://127.0.0.1:8080",
		DeviceID:       "dev-1",
		CredentialFile: "dev-1.credential",
		Harnesses:      []harness.Adapter{script.New(script.Script{Steps: []script.Step{{Echo: true}}})},
		Version:        "my-runtime/1.2.0",
	})
	if err != nil {
		log.Fatal(err)
	}
}
