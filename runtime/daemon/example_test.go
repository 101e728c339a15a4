package daemon_test

import (
	"context"
	"log"
	"os"
	"os/signal"

	"github.com/agentwire/agentwire/runtime/adapters/script"
	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/runtime/harness"
)

// A Runtime serving one Harness until interrupted. The script adapter
// stands in for your own harness.Adapter (examples/embed-runtime writes
// one); the credential is the secret `agentwire core credential issue
// --kind device` printed for this device.
func ExampleRun() {
	reg := harness.NewRegistry()
	if err := reg.Register(script.New(script.Script{Steps: []script.Step{{Echo: true}}})); err != nil {
		log.Fatal(err)
	}
	secret, err := os.ReadFile("dev-1.credential")
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err = daemon.Run(ctx, daemon.Config{
		CoreURL:    "http://127.0.0.1:8080",
		DeviceID:   "dev-1",
		Credential: daemon.NewCredential(string(secret)),
		Registry:   reg,
		Version:    "my-runtime/1.2.0",
	})
	if err != nil {
		log.Fatal(err)
	}
}
