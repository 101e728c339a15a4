package transcript

import (
	"context"
	"errors"
	"sync"

	"github.com/agentwire/agentwire/internal/peer"
)

// faulty wraps a transport so a scenario can make the next write fail and
// can tell whether anything was written.
type faulty struct {
	peer.Transport
	mu      sync.Mutex
	fail    bool
	written int
}

var errInjected = errors.New("scenario: injected write failure")

func (f *faulty) failNext() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = true
}

func (f *faulty) writes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.written
}

func (f *faulty) Write(ctx context.Context, frame []byte) error {
	f.mu.Lock()
	fail := f.fail
	f.fail = false
	f.written++
	f.mu.Unlock()
	if fail {
		return errInjected
	}
	return f.Transport.Write(ctx, frame)
}
