package daemon_test

// Benchmarks of the Runtime daemon against raw coder/websocket on loopback
// (issue 9; figures in BENCHMARKS.md):
//
//	go test -run '^$' -bench . -count 6 ./runtime/daemon/
//
// Each benchmark measures its raw baseline in the same run, interleaved in
// chunks with the daemon's work so that both see the same load, and reports
// ns/op for the daemon alone (the chunks of baseline and setup are not in
// it), raw-ns/op for the baseline and their ratio.

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
	"github.com/agentwire/agentwire/wire"
)

// deltaScript streams n deltas.
func deltaScript(n int) script.Script {
	steps := make([]script.Step, n)
	for i := range steps {
		steps[i] = script.Step{Delta: benchDelta}
	}
	return script.Script{Steps: steps}
}

// BenchmarkDeltaStream: one op is one delta from the script adapter,
// through the execution Session, the driver and its Conn, to Core's read.
// A Turn streams up to deltasPerTurn deltas; its preparation and its done
// are outside the measurement, its start → started is inside (one round
// trip per 4096 deltas). The baseline writes the same number of encoded
// delta frames one way with coder/websocket.
func BenchmarkDeltaStream(b *testing.B) {
	const deltasPerTurn = 4096
	bs := startBench(b, deltaScript(deltasPerTurn), 0)
	rs, rc := rawPair(b)
	frame, err := wire.Encode("run-1", wire.Delta{Delta: benchDelta, Sequence: deltasPerTurn}, "")
	require.NoError(b, err)
	var daemonT, rawT span
	b.ResetTimer()
	for turn, left := 1, b.N; left > 0; turn++ {
		n := min(deltasPerTurn, left)
		left -= n
		if n != deltasPerTurn {
			bs.adapter.Set(deltaScript(n))
		}
		rawT.add(rawOneWay(b, rs, rc, frame, n))
		daemonT.add(bs.deltaTurn(turn, n))
	}
	b.StopTimer()
	reportRatio(b, daemonT, rawT)
	b.ReportMetric(100*float64(rawT.wall)/float64(daemonT.wall), "pct-of-raw")
	b.ReportMetric(100*float64(rawT.cpu)/float64(daemonT.cpu), "cpu-pct-of-raw")
}

// deltaTurn prepares a handle, then times start → the n-th delta read.
func (s *benchSession) deltaTurn(turn, n int) span {
	pid, rid := fmt.Sprintf("prepare-%d", turn), fmt.Sprintf("run-%d", turn)
	ready := s.prepare(pid)
	prefix := []byte(`{"type":"delta","id":"` + rid + `"`)
	w := startWatch()
	s.start(pid, rid, ready)
	for seen := 0; seen < n; {
		f := s.readRaw()
		if !bytes.HasPrefix(f, prefix) {
			continue // starting, started
		}
		seen++
		if seen == 1 {
			m, err := wire.Decode(f, wire.RuntimeToCore)
			require.NoError(s.tb, err)
			require.EqualValues(s.tb, 1, m.Payload.(wire.Delta).Sequence)
		}
	}
	elapsed := w.stop()
	done := s.await("done", rid, "").Payload.(wire.Done)
	require.Equal(s.tb, n*len(benchDelta), len(done.Content), "done content: %.200q", done.Content)
	return elapsed
}

// BenchmarkTurnSetup: one op is execution_prepare → ready → execution_start
// → started, as Core sees it. The Turn has no steps: its done follows at
// once (and may overlap the end of the measurement); Core reads it outside
// the measurement. The baseline is two round trips of a request frame and
// a status-sized answer with coder/websocket.
func BenchmarkTurnSetup(b *testing.B) {
	bs := startBench(b, script.Script{}, 1<<20)
	rs, rc := rawPair(b)
	request := []byte(`{"type":"execution_prepare","id":"prepare-1","payload":` + prepare + `}`)
	answer, err := wire.Encode("prepare-1", wire.PreparationStatus{State: wire.PreparationReady, Revision: 2,
		Handle: "handle-0123456789abcdef01234567", ExecutorID: "executor-0123456789abcdef01234567", ExpiresAt: 1_800_000_300_000}, "")
	require.NoError(b, err)
	go rawEcho(rc, answer)
	const chunk = 16
	var daemonT, rawT span
	b.ResetTimer()
	for i := 0; i < b.N; i += chunk {
		n := min(chunk, b.N-i)
		rawT.add(rawRoundTrips(b, rs, request, n))
		for j := range n {
			daemonT.add(bs.setupTurn(i + j))
		}
	}
	b.StopTimer()
	reportRatio(b, daemonT, rawT)
	b.ReportMetric(float64(daemonT.wall)/float64(rawT.wall), "x-raw")
	b.ReportMetric(float64(daemonT.cpu)/float64(rawT.cpu), "cpu-x-raw")
}

// setupTurn times one prepare → ready → start → started, then reads the
// Turn's done (the script has no steps) untimed. Core keeps the ready and
// the started frames and decodes them strictly once the watch is stopped:
// in the timed section it reads only the handle and the Executor ID.
func (s *benchSession) setupTurn(k int) span {
	pid, rid := fmt.Sprintf("prepare-%d", k), fmt.Sprintf("run-%d", k)
	w := startWatch()
	s.write("execution_prepare", pid, prepare)
	readyFrame := s.awaitRaw("preparation_status", pid, wire.PreparationReady)
	s.start(pid, rid, s.grantOf(readyFrame))
	startedFrame := s.awaitRaw("preparation_status", pid, wire.PreparationStarted)
	elapsed := w.stop()
	ready := s.decode(readyFrame).Payload.(wire.PreparationStatus)
	require.Equal(s.tb, wire.PreparationReady, ready.State)
	quick := s.grantOf(readyFrame)
	require.Equal(s.tb, [2]string{ready.Handle, ready.ExecutorID}, [2]string{quick.Handle, quick.ExecutorID}, "Core's quick reading of ready")
	require.Equal(s.tb, rid, s.decode(startedFrame).Payload.(wire.PreparationStatus).RunID)
	s.await("done", rid, "")
	return elapsed
}

// reportRatio replaces ns/op with the daemon's time alone and adds the
// baseline's, and both CPU times (the whole process's: daemon and Core, or
// the baseline's two ends).
func reportRatio(b *testing.B, daemonT, rawT span) {
	n := float64(b.N)
	b.ReportMetric(float64(daemonT.wall.Nanoseconds())/n, "ns/op")
	b.ReportMetric(float64(rawT.wall.Nanoseconds())/n, "raw-ns/op")
	b.ReportMetric(float64(daemonT.cpu)/n, "cpu-ns/op")
	b.ReportMetric(float64(rawT.cpu)/n, "raw-cpu-ns/op")
}

// BenchmarkMemory: the daemon's live heap with 64 admitted handles (ready,
// each holding an idle Executor) and 8 running Turns (prompt_request, each
// hanging after its first delta), measured with runtime.ReadMemStats after
// a GC. One op is one daemon brought to that state. The baseline is the
// connected, idle daemon.
func BenchmarkMemory(b *testing.B) {
	const handles, turns = 64, 8
	var idle, perHandle, perTurn, stackPerTurn, goPerTurn, total float64
	for range b.N {
		before := measure()
		bs := startBench(b, script.Script{Steps: []script.Step{{Delta: "x"}, {Hang: true}}}, handles+turns)
		connected := measure()
		for i := range handles {
			bs.prepare(fmt.Sprintf("prepare-%d", i))
		}
		admitted := measure()
		for i := range turns {
			rid := fmt.Sprintf("run-%d", i)
			bs.write("prompt_request", rid, `{"agent_kind":"script","run_id":"`+rid+`","input":[{"content":[{"type":"input_text","text":"hi"}]}]}`)
			bs.await("delta", rid, "")
		}
		running := measure()
		bs.close()

		idle += float64(connected.heap) - float64(before.heap)
		perHandle += (float64(admitted.heap) - float64(connected.heap)) / handles
		perTurn += (float64(running.heap) - float64(admitted.heap)) / turns
		stackPerTurn += (float64(running.stack) - float64(admitted.stack)) / turns
		goPerTurn += float64(running.goroutines-admitted.goroutines) / turns
		total += float64(running.heap) - float64(before.heap)
	}
	n := float64(b.N)
	b.ReportMetric(idle/n, "idle-conn-B")
	b.ReportMetric(perHandle/n, "B/handle")
	b.ReportMetric(perTurn/n, "B/turn")
	b.ReportMetric(stackPerTurn/n, "stack-B/turn")
	b.ReportMetric(goPerTurn/n, "goroutines/turn")
	b.ReportMetric(total/n, "total-B")
}

type memSample struct {
	heap, stack uint64
	goroutines  int
}

// measure is the live heap after a full collection (twice, so that
// finalizers queued by the first have run), the stacks in use and the
// goroutine count.
func measure() memSample {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSample{heap: ms.HeapAlloc, stack: ms.StackInuse, goroutines: runtime.NumGoroutine()}
}

// BenchmarkMemoryPerFinishedTurn: what a connection keeps of each Turn that
// has finished (prepared, started, done, Executor closed). The driver keeps
// a settled instance for a minute, at most 1024 Runs and 64 preparations
// per connection; once both caps are reached (after warm Turns), whatever
// still grows per Turn is kept by the connection for as long as it lives.
// One op is one daemon taken through warm + measured Turns, each streaming
// one delta of the sub-benchmark's size (the Turn's content).
func BenchmarkMemoryPerFinishedTurn(b *testing.B) {
	for _, size := range []int{1, 4096} {
		b.Run(fmt.Sprintf("content=%dB", size), func(b *testing.B) { memoryPerFinishedTurn(b, strings.Repeat("x", size)) })
	}
}

func memoryPerFinishedTurn(b *testing.B, delta string) {
	const warm, measured = 1100, 1000
	var perTurn float64
	for range b.N {
		bs := startBench(b, script.Script{Steps: []script.Step{{Delta: delta}}}, 1<<20)
		for k := range warm {
			bs.setupTurn(k)
		}
		at := measure()
		for k := range measured {
			bs.setupTurn(warm + k)
		}
		after := measure()
		bs.close()
		perTurn += (float64(after.heap) - float64(at.heap)) / measured
	}
	b.ReportMetric(perTurn/float64(b.N), "B/finished-turn")
}
