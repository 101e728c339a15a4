package wire

import (
	"encoding/json"
	"testing"
)

// The strict path (Decode: envelope, catalog, id, strict payload, validation)
// against encoding/json decoding the same bytes into the same structs. The
// heartbeat's structs decode themselves strictly (capabilities must be
// complete), so BenchmarkLenientHeartbeat adds a baseline with no custom
// decoder at all.

type plainDelta struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Payload Delta  `json:"payload"`
	Trace   string `json:"trace"`
}

type plainHeartbeat struct {
	Type    string    `json:"type"`
	ID      string    `json:"id"`
	Payload Heartbeat `json:"payload"`
	Trace   string    `json:"trace"`
}

// benchFrame wraps the largest example of typ: for the heartbeat, the one
// declaring the most agent kinds with every capability.
func benchFrame(b *testing.B, typ, id string) []byte {
	ex := examplesOf(b, typ)
	best := ex[0]
	for _, e := range ex {
		if len(e) > len(best) {
			best = e
		}
	}
	return frame(b, typ, id, string(best))
}

func BenchmarkDecodeDelta(b *testing.B) {
	f := benchFrame(b, TypeDelta, "run-1")
	b.ReportAllocs()
	b.SetBytes(int64(len(f)))
	defer reportCPU(b, cpuClock())
	for b.Loop() {
		if _, err := Decode(f, RuntimeToCore); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPlainDelta(b *testing.B) {
	f := benchFrame(b, TypeDelta, "run-1")
	b.ReportAllocs()
	b.SetBytes(int64(len(f)))
	defer reportCPU(b, cpuClock())
	for b.Loop() {
		var v plainDelta
		if err := json.Unmarshal(f, &v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeHeartbeat(b *testing.B) {
	f := benchFrame(b, TypeHeartbeat, "")
	b.ReportAllocs()
	b.SetBytes(int64(len(f)))
	defer reportCPU(b, cpuClock())
	for b.Loop() {
		if _, err := Decode(f, RuntimeToCore); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPlainHeartbeat(b *testing.B) {
	f := benchFrame(b, TypeHeartbeat, "")
	b.ReportAllocs()
	b.SetBytes(int64(len(f)))
	defer reportCPU(b, cpuClock())
	for b.Loop() {
		var v plainHeartbeat
		if err := json.Unmarshal(f, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// mirrorHeartbeat has the heartbeat's JSON shape with no custom decoder
// anywhere (capabilities as plain bools): what a lenient peer would pay.
type mirrorHeartbeat struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Payload struct {
		TS                  int64  `json:"ts"`
		ActiveRequests      int    `json:"active_requests"`
		DaemonVersion       string `json:"daemon_version"`
		SupportedAgentKinds []struct {
			Kind         string          `json:"kind"`
			Available    *bool           `json:"available"`
			Version      string          `json:"version"`
			Capabilities map[string]bool `json:"capabilities"`
		} `json:"supported_agent_kinds"`
	} `json:"payload"`
	Trace string `json:"trace"`
}

func BenchmarkLenientHeartbeat(b *testing.B) {
	f := benchFrame(b, TypeHeartbeat, "")
	b.ReportAllocs()
	b.SetBytes(int64(len(f)))
	defer reportCPU(b, cpuClock())
	for b.Loop() {
		var v mirrorHeartbeat
		if err := json.Unmarshal(f, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeDelta: Encode of a typical delta (validate, marshal, envelope).
func BenchmarkEncodeDelta(b *testing.B) {
	p := Delta{Delta: "a few words of output", Sequence: 7}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode("run-1", p, ""); err != nil {
			b.Fatal(err)
		}
	}
}
