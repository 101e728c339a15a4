package chaos

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is a TCP proxy from the Runtimes to Core that cuts connections at
// random points: after a random number of bytes in one direction, or after
// a random time, whichever comes first. Cutting closes both sides at once,
// so each peer sees its socket die mid-stream, as with a lost network
// path, not a clean close.
//
// Every connection draws its fate from the proxy's seeded generator when
// it is accepted; at most maxCuts connections are cut: once that many
// were, a connection whose fate comes due is left alone.
type Proxy struct {
	ln      net.Listener
	targets []string // dialed in order: the first that answers serves
	maxCuts int64
	// Cuts counts connections cut so far.
	Cuts atomic.Int64

	mu  sync.Mutex
	rng *rand.Rand
	on  bool // cutting is enabled (the quiet phase turns it off)

	wg     sync.WaitGroup
	conns  sync.Map // net.Conn -> struct{}
	closed atomic.Bool
}

// NewProxy listens on 127.0.0.1 (a free port) and forwards to target.
func NewProxy(target string, seed uint64, maxCuts int) (*Proxy, error) {
	return NewBalancer([]string{target}, seed, maxCuts)
}

// NewBalancer is NewProxy to several Core replicas: each connection goes
// to the first of targets that accepts it, so the Runtimes move to the
// next replica when one dies (a minimal load balancer in front of the
// replicas, as docs/deployment.md describes).
func NewBalancer(targets []string, seed uint64, maxCuts int) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos proxy: listen: %w", err)
	}
	p := &Proxy{ln: ln, targets: targets, maxCuts: int64(maxCuts), rng: rand.New(rand.NewPCG(seed, 0x70c0)), on: true}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's address (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetCutting turns cutting on or off, for open connections too.
func (p *Proxy) SetCutting(on bool) {
	p.mu.Lock()
	p.on = on
	p.mu.Unlock()
}

// Close stops accepting, closes every open connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() error {
	p.closed.Store(true)
	err := p.ln.Close()
	p.conns.Range(func(k, _ any) bool {
		_ = k.(net.Conn).Close()
		return true
	})
	p.wg.Wait()
	return err
}

// fate is what happens to one connection: cut after budget bytes (in
// the direction dir, 0 = Runtime to Core, 1 = Core to Runtime) or after
// life, whichever first; zero values mean never.
type fate struct {
	budget int64
	dir    int
	life   time.Duration
}

func (p *Proxy) draw() fate {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.on || p.Cuts.Load() >= p.maxCuts || p.rng.IntN(4) == 0 {
		return fate{} // a quarter of the connections live
	}
	// The byte budgets cover the handshake (a few hundred bytes), the
	// first heartbeats and frames of Runs; the times cover a connection
	// that carries a whole Turn or several.
	f := fate{dir: p.rng.IntN(2)}
	switch p.rng.IntN(3) {
	case 0:
		f.budget = 1 + p.rng.Int64N(4<<10)
	case 1:
		f.budget = 4<<10 + p.rng.Int64N(60<<10)
	default:
		f.life = time.Duration(100+p.rng.IntN(4000)) * time.Millisecond
	}
	return f
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Add(1)
		go p.serve(c, p.draw())
	}
}

// serve pipes one connection to Core until either side ends or its fate
// cuts it.
func (p *Proxy) serve(down net.Conn, f fate) {
	defer p.wg.Done()
	var up net.Conn
	err := errors.New("no target")
	for _, target := range p.targets {
		if up, err = net.DialTimeout("tcp", target, 5*time.Second); err == nil {
			break
		}
	}
	if err != nil {
		_ = down.Close() // Core is down: the Runtime sees a refused bootstrap
		return
	}
	p.conns.Store(down, struct{}{})
	p.conns.Store(up, struct{}{})
	defer p.conns.Delete(down)
	defer p.conns.Delete(up)
	if p.closed.Load() {
		_ = down.Close()
		_ = up.Close()
		return
	}
	var once sync.Once
	closeBoth := func(hard bool) {
		once.Do(func() {
			for _, c := range []net.Conn{down, up} {
				if tc, ok := c.(*net.TCPConn); ok && hard {
					// A reset, not a FIN: the peers see a dead socket.
					_ = tc.SetLinger(0)
				}
				_ = c.Close()
			}
		})
	}
	// cut cuts the connection unless the bound was reached; it reports
	// whether it did.
	cut := func() bool {
		p.mu.Lock()
		on := p.on
		p.mu.Unlock()
		if !on { // the quiet phase spares connections armed before it
			return false
		}
		if p.Cuts.Add(1) > p.maxCuts {
			p.Cuts.Add(-1)
			return false
		}
		closeBoth(true)
		return true
	}
	if f.life > 0 {
		t := time.AfterFunc(f.life, func() { cut() })
		defer t.Stop()
	}
	var wg sync.WaitGroup
	wg.Add(2)
	for dir, pair := range [][2]net.Conn{{up, down}, {down, up}} {
		budget := int64(0)
		if f.budget > 0 && f.dir == dir {
			budget = f.budget
		}
		go func() {
			defer wg.Done()
			if budget > 0 {
				n, err := io.Copy(pair[0], io.LimitReader(pair[1], budget))
				if err == nil && n == budget && cut() {
					return
				}
			}
			_, _ = io.Copy(pair[0], pair[1])
			closeBoth(false) // one side ended: end the other
		}()
	}
	wg.Wait()
}
