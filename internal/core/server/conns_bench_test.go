package server_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/wire"
)

// The simulated daemons of BenchmarkIdleConnections run in their own
// process (the test binary again, running TestIdleSwarm), so that Core's
// memory is measured alone and each side has its own open-file limit.
const (
	swarmURLEnv     = "AGENTWIRE_SWARM_URL"
	swarmSecretsEnv = "AGENTWIRE_SWARM_SECRETS"
	// benchConnsEnv overrides the number of connections (10000).
	benchConnsEnv = "AGENTWIRE_BENCH_CONNS"
)

// BenchmarkIdleConnections holds N Runtime connections (10,000 unless
// AGENTWIRE_BENCH_CONNS says otherwise) open against one Core, each
// heartbeating at the default 15 s interval from a separate process, and
// reports Core's heap and stack per connection and its goroutines per
// connection; then every daemon sends 10 heartbeats back to back and it
// reports the heartbeats per second Core validated and persisted (memory
// store). It measures once, whatever b.N is.
func BenchmarkIdleConnections(b *testing.B) {
	n := 10000
	if v := os.Getenv(benchConnsEnv); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(b, err)
	}
	c := newBenchCore(b, openBenchStore(b, "memory"), 1)
	ctx := context.Background()
	var secrets strings.Builder
	for i := 0; i < n; i++ {
		dev := fmt.Sprintf("dev-%d", i)
		_, s, err := c.is.Issue(ctx, store.KindDevice, dev, "bench")
		require.NoError(b, err)
		fmt.Fprintf(&secrets, "%s %s\n", dev, s.Reveal())
	}
	file := filepath.Join(b.TempDir(), "secrets")
	require.NoError(b, os.WriteFile(file, []byte(secrets.String()), 0o600))

	before, beforeStack := inUse(), stackInUse()
	goroutines := runtime.NumGoroutine()
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdleSwarm$")
	cmd.Env = append(os.Environ(), swarmURLEnv+"="+c.http.URL, swarmSecretsEnv+"="+file)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(b, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	defer func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}()
	lines := bufio.NewScanner(stdout)
	expect := func(prefix string) {
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), prefix) {
				return
			}
		}
		b.Fatalf("the swarm ended before %q", prefix)
	}
	start := time.Now()
	expect("ready")
	waitDeclarations(c, int64(n))
	connectAll := time.Since(start)
	after, afterStack := inUse(), stackInUse()
	if path := os.Getenv("AGENTWIRE_BENCH_HEAPPROFILE"); path != "" {
		// What the idle connections hold: go tool pprof -sample_index=inuse_space.
		f, err := os.Create(path)
		require.NoError(b, err)
		require.NoError(b, pprof.WriteHeapProfile(f))
		require.NoError(b, f.Close())
	}
	b.ReportMetric(float64(n), "conns")
	b.ReportMetric(float64(after-before)/float64(n)/1024, "KiB/conn")
	b.ReportMetric(float64(afterStack-beforeStack)/float64(n)/1024, "stack-KiB/conn")
	b.ReportMetric(float64(runtime.NumGoroutine()-goroutines)/float64(n), "goroutines/conn")
	b.ReportMetric(connectAll.Seconds(), "s-to-connect-all")

	const burst = 10
	d0 := c.st.declarations.Load()
	start = time.Now()
	_, err = fmt.Fprintf(stdin, "burst %d\n", burst)
	require.NoError(b, err)
	waitDeclarations(c, d0+int64(n*burst))
	b.ReportMetric(float64(n*burst)/time.Since(start).Seconds(), "heartbeats/s")
}

// inUse is the heap and stack in use after a full collection.
func inUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// stackInUse is the stack part of inUse.
func stackInUse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.StackInuse
}

func waitDeclarations(c *benchCore, want int64) {
	for wait := time.Millisecond; c.st.declarations.Load() < want; wait = min(2*wait, 50*time.Millisecond) {
		time.Sleep(wait)
	}
}

// TestIdleSwarm is the daemon side of BenchmarkIdleConnections, run in a
// process of its own; it skips unless that benchmark started it. It opens
// one connection per line of the secrets file, heartbeats at once and
// every 15 s, prints "ready", and on "burst K" sends K heartbeats on every
// connection at once; it ends when its standard input closes.
func TestIdleSwarm(t *testing.T) {
	url, file := os.Getenv(swarmURLEnv), os.Getenv(swarmSecretsEnv)
	if url == "" || file == "" {
		t.Skip("run by BenchmarkIdleConnections")
	}
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	hb, err := wire.Encode("", fullHeartbeat(), "")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	type daemon struct {
		ws *websocket.Conn
		mu sync.Mutex
	}
	send := func(d *daemon) {
		d.mu.Lock()
		defer d.mu.Unlock()
		_ = d.ws.Write(ctx, websocket.MessageText, hb)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	daemons := make([]*daemon, len(lines))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	var dialErr error
	var errOnce sync.Once
	for i, l := range lines {
		dev, secret, _ := strings.Cut(l, " ")
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ws, err := dialCore(ctx, url, dev, secret)
			if err != nil {
				errOnce.Do(func() { dialErr = err })
				return
			}
			daemons[i] = &daemon{ws: ws}
			send(daemons[i])
		}()
	}
	wg.Wait()
	require.NoError(t, dialErr)

	var loops sync.WaitGroup
	for _, d := range daemons {
		loops.Add(2)
		go func() { // a reader, as every daemon has
			defer loops.Done()
			for {
				if _, _, err := d.ws.Read(ctx); err != nil {
					return
				}
			}
		}()
		go func() {
			defer loops.Done()
			tick := time.NewTicker(15 * time.Second)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					send(d)
				}
			}
		}()
	}
	fmt.Println("ready", len(daemons))
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if k, ok := strings.CutPrefix(in.Text(), "burst "); ok {
			n, _ := strconv.Atoi(k)
			var burst sync.WaitGroup
			for _, d := range daemons {
				burst.Add(1)
				go func() {
					defer burst.Done()
					for j := 0; j < n; j++ {
						send(d)
					}
				}()
			}
			burst.Wait()
			fmt.Println("burst done")
		}
	}
	cancel()
	for _, d := range daemons {
		_ = d.ws.CloseNow()
	}
	loops.Wait()
}
