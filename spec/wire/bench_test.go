package wire

import (
	"encoding/json"
	"testing"
)

// The strict path (Decode: envelope, catalog, id, strict payload, validation)
// against encoding/json decoding the same bytes into the same structs.

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

func benchFrame(b *testing.B, typ, id string, n int) []byte {
	ex := examplesOf(b, typ)
	return frame(b, typ, id, string(ex[n%len(ex)]))
}

func BenchmarkDecodeDelta(b *testing.B) {
	f := benchFrame(b, TypeDelta, "run-1", 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(f)))
	for b.Loop() {
		if _, err := Decode(f, RuntimeToCore); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPlainDelta(b *testing.B) {
	f := benchFrame(b, TypeDelta, "run-1", 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(f)))
	for b.Loop() {
		var v plainDelta
		if err := json.Unmarshal(f, &v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeHeartbeat(b *testing.B) {
	f := benchFrame(b, TypeHeartbeat, "", 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(f)))
	for b.Loop() {
		if _, err := Decode(f, RuntimeToCore); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPlainHeartbeat(b *testing.B) {
	f := benchFrame(b, TypeHeartbeat, "", 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(f)))
	for b.Loop() {
		var v plainHeartbeat
		if err := json.Unmarshal(f, &v); err != nil {
			b.Fatal(err)
		}
	}
}
