package wire

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkFrames decodes typical frames and the worst frames that can be
// built under MaxFrameBytes in one run, and reports the cost per KiB of
// frame (ns/KiB, B/KiB, and cpu-ns/KiB, the process's CPU time, which a
// shared machine disturbs less; run with -cpu 1) so that sizes compare: the
// target is at most 10× the time and 4× the memory per byte of a typical
// valid frame of the same type (BENCHMARKS.md).
func BenchmarkFrames(b *testing.B) {
	for _, c := range benchFrames(b) {
		b.Run(c.name, func(b *testing.B) {
			if _, err := Decode(c.frame, c.dir); (err == nil) != c.valid {
				b.Fatalf("valid=%v, got %v", c.valid, err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(c.frame)))
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			before, cpu := ms.TotalAlloc, cpuClock()
			for b.Loop() {
				_, _ = Decode(c.frame, c.dir)
			}
			cpu = cpuClock() - cpu
			runtime.ReadMemStats(&ms)
			kib := float64(len(c.frame)) / 1024
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/kib, "ns/KiB")
			if cpu > 0 {
				b.ReportMetric(float64(cpu)/float64(b.N)/kib, "cpu-ns/KiB")
			}
			b.ReportMetric(float64(ms.TotalAlloc-before)/float64(b.N)/kib, "B/KiB")
		})
	}
}

type benchCase struct {
	name  string
	frame []byte
	dir   Direction
	valid bool
}

// fill repeats unit, separated by commas, until the result nears size.
func fill(unit func(i int) string, size int) string {
	var s strings.Builder
	for i := 0; s.Len() < size; i++ {
		if i > 0 {
			s.WriteByte(',')
		}
		s.WriteString(unit(i))
	}
	return s.String()
}

func benchFrames(b *testing.B) []benchCase {
	const near = MaxFrameBytes - 64<<10 // room for the envelope and the last unit
	R := RuntimeToCore
	tool := func(args string) []byte {
		return env(TypeToolCall, hostileRun, `{"id":"c1","name":"Bash","stage":"after","args":`+args+`}`)
	}
	// A realistic large result: search hits of a code tool.
	hits := `{"hits":[` + fill(func(i int) string {
		return `{"path":"src/pkg/file` + strconv.Itoa(i) + `.go","line":` + strconv.Itoa(i%500) + `,"text":"func handle(w http.ResponseWriter, r *http.Request) { return }","tags":["go","http"]}`
	}, 3<<20) + `]}`
	seventeen := func(i int) string {
		var s strings.Builder
		s.WriteString("{")
		for k := 0; k < 17; k++ {
			if k > 0 {
				s.WriteByte(',')
			}
			s.WriteString(`"m` + strconv.Itoa(k) + `":` + strconv.Itoa(i))
		}
		return s.String() + "}"
	}
	escaped := func(i int) string {
		var s strings.Builder
		s.WriteString("{")
		for k := 0; k < 16; k++ {
			if k > 0 {
				s.WriteByte(',')
			}
			s.WriteString(`"\u0061\u0062\u0063\u0064\u0065\u0066` + strconv.Itoa(k) + `":0`)
		}
		return s.String() + "}"
	}
	deep := nested("[", "0", "]", MaxJSONDepth-3)
	caps := benchCaps(b)
	return []benchCase{
		{name: "typical/delta", frame: benchFrame(b, TypeDelta, hostileRun), dir: R, valid: true},
		{name: "worst/delta_3MiB_sequence", frame: env(TypeDelta, hostileRun, `{"delta":"x","sequence":`+strings.Repeat("9", 3<<20)+`}`), dir: R},
		{name: "worst/delta_4MiB_of_[", frame: []byte(`{"type":"delta","id":"r1","payload":{"a":` + strings.Repeat("[", near)), dir: R},
		{name: "worst/delta_4MiB_text_bad_UTF-8_at_end", frame: env(TypeDelta, hostileRun, `{"delta":"`+strings.Repeat("x", near)+"\xff\"}"), dir: R},

		{name: "typical/tool_call", frame: benchFrame(b, TypeToolCall, hostileRun), dir: R, valid: true},
		{name: "typical/tool_call_3MiB_result", frame: tool(hits), dir: R, valid: true},
		{name: "worst/tool_call_3MiB_unknown_member_at_end", frame: env(TypeToolCall, hostileRun, `{"id":"c1","name":"Bash","stage":"after","args":`+hits+`,"zz":1}`), dir: R},
		{name: "worst/tool_call_wide_object", frame: tool("{" + fill(func(i int) string { return `"k` + strconv.Itoa(i) + `":0` }, near) + "}"), dir: R, valid: true},
		{name: "worst/tool_call_wide_object_repeat_at_end", frame: tool("{" + fill(func(i int) string { return `"k` + strconv.Itoa(i) + `":0` }, near) + `,"k17":0}`), dir: R},
		{name: "worst/tool_call_17-member_objects", frame: tool(`{"a":[` + fill(seventeen, near) + `]}`), dir: R, valid: true},
		{name: "worst/tool_call_escaped_names", frame: tool(`{"a":[` + fill(escaped, near) + `]}`), dir: R, valid: true},
		{name: "worst/tool_call_nesting_at_the_limit", frame: tool(`{"a":[` + fill(func(int) string { return deep }, near) + `]}`), dir: R, valid: true},
		{name: "worst/tool_call_surrogate_pairs", frame: tool(`{"a":"` + strings.Repeat(`\ud83d\ude00`, near/12) + `"}`), dir: R, valid: true},
		{name: "worst/tool_call_zeros", frame: tool(`{"a":[` + fill(func(int) string { return "0" }, near) + `]}`), dir: R, valid: true},

		{name: "typical/heartbeat", frame: benchFrame(b, TypeHeartbeat, ""), dir: R, valid: true},
		{name: "worst/heartbeat_many_kinds", frame: env(TypeHeartbeat, "", `{"ts":1,"active_requests":0,"supported_agent_kinds":[`+fill(func(i int) string {
			return `{"kind":"k` + strconv.Itoa(i) + `","available":true,"capabilities":` + caps + `}`
		}, near-4<<10)+`]}`), dir: R, valid: true},
		{name: "worst/heartbeat_ignored_member", frame: env(TypeHeartbeat, "", `{"ts":1,"active_requests":0,"x":[`+fill(func(i int) string { return deep }, near)+`]}`), dir: R, valid: true},
	}
}

// benchCaps is a complete capability declaration.
func benchCaps(b *testing.B) string {
	out, err := heartbeatCaps(Supported).MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	return string(out)
}
