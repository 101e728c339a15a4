package api

// A 1 MiB file read's public response (issue 25): writeJSON (encoding/json
// into its own buffer, then written) against writeContent (base64 piece by
// piece into the writer). The writer discards, so that what is measured is
// the encoding:
//
//	go test -run '^$' -bench Content ./core/api/

import (
	"net/http"
	"testing"
)

type discardRW struct{ h http.Header }

func (d *discardRW) Header() http.Header         { return d.h }
func (d *discardRW) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardRW) WriteHeader(int)             {}

func BenchmarkContentJSON(b *testing.B) {
	c := FilesContent{SessionID: "s", Path: "p", Data: make([]byte, 1<<20), SizeBytes: 1 << 20}
	b.SetBytes(1 << 20)
	b.ReportAllocs()
	for b.Loop() {
		writeJSON(&discardRW{h: http.Header{}}, 200, c)
	}
}

func BenchmarkContentDirect(b *testing.B) {
	c := FilesContent{SessionID: "s", Path: "p", Data: make([]byte, 1<<20), SizeBytes: 1 << 20}
	b.SetBytes(1 << 20)
	b.ReportAllocs()
	for b.Loop() {
		_ = writeContent(&discardRW{h: http.Header{}}, c)
	}
}
