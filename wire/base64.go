package wire

import (
	"bytes"
	"slices"

	asmbase64 "github.com/segmentio/asm/base64"
)

// Base64 of the bulk payloads (issue 25). Every chunk, byte read and export
// result carries its data as padded standard base64, and on both peers the
// coding of those bytes was the largest single cost of a transfer after the
// transport itself: 45 µs per 64 KiB chunk for the decoder below in plain
// Go, 44 µs for encoding/base64. segmentio/asm codes the same alphabet
// with AVX2 (and NEON) where the processor has it, about eight times
// faster here (BENCHMARKS.md, "Data path (issue 25)"), and falls back to
// encoding/base64 elsewhere and for every tail and every input it does not
// recognise, so it accepts and refuses exactly what encoding/base64 does.
//
// stdBase64 is the strict decoder: canonical padding bits, no junk. Like
// encoding/base64's Strict() it still skips line breaks; decodeBase64Strict
// refuses them.
var (
	stdBase64       = asmbase64.StdEncoding
	stdBase64Strict = asmbase64.StdEncoding.Strict()
)

// base64Len is the encoded length of n bytes, padded.
func base64Len(n int) int { return stdBase64.EncodedLen(n) }

// appendBase64 appends the padded standard base64 of src to dst.
func appendBase64(dst, src []byte) []byte {
	n := stdBase64.EncodedLen(len(src))
	dst = slices.Grow(dst, n)
	stdBase64.Encode(dst[len(dst):len(dst)+n], src)
	return dst[:len(dst)+n]
}

// decodeBase64 decodes src as encoding/base64's StdEncoding.Strict() does
// (line breaks skipped) into a new slice.
func decodeBase64(src []byte) ([]byte, error) {
	d := make([]byte, stdBase64.DecodedLen(len(src)))
	n, err := stdBase64Strict.Decode(d, src)
	if err != nil {
		return nil, err
	}
	return d[:n], nil
}

// decodeBase64Strict decodes src, canonical padded standard base64 (what
// base64.StdEncoding.Strict() accepts, without the line breaks it skips),
// into dst and returns the number of bytes decoded. dst must hold
// DecodedLen(len(src)) bytes. ok is false for anything else: a length that
// is not a multiple of 4, a byte outside the alphabet, padding anywhere but
// at the end, non-zero padding bits, a line break.
//
// The fast path hands it the raw bytes of a JSON string it has not
// scanned, so a line break (invalid inside a JSON string) must be refused
// here rather than skipped; two vectorised scans for it cost a few
// microseconds per chunk.
func decodeBase64Strict(dst, src []byte) (int, bool) {
	if len(src)%4 != 0 {
		return 0, false
	}
	if len(src) == 0 {
		return 0, true
	}
	if bytes.IndexByte(src, '\n') >= 0 || bytes.IndexByte(src, '\r') >= 0 {
		return 0, false
	}
	n, err := stdBase64Strict.Decode(dst, src)
	return n, err == nil
}
