package wire

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"sync"
)

// The receiving side of a transfer chunk (issue 25). A chunk step of
// workspace_write or runtime_prepare is almost all of a 50 MiB transfer:
// 800 frames of about 87 KiB of base64. The general path reads each of
// them four times (the envelope walk, the strict scan of every string
// byte, the member split, base64) and decodes into a fresh, zeroed 64 KiB
// slice. decodeChunkStep reads the common shape once: it splits the three
// members, and decodes the data string straight into a pooled buffer with
// a decoder that refuses every byte outside the base64 alphabet, so the
// strict scan of that string (UTF-8, control characters, escapes) has
// nothing left to find. Anything it does not recognise (another member, an
// escape, bad base64, a number that is not a plain integer) goes to the
// general path, which decodes or words the error exactly as before.
//
// The data is decoded into a buffer of its own rather than in place in the
// frame: the decoded message's envelope keeps its payload as a slice of the
// frame (Envelope.Payload), which a refusal may still log or quote.

// chunkBufBytes is the size of a pooled chunk buffer: a whole chunk plus
// the slack decodeBase64Strict's eight-byte stores write past the data.
const chunkBufBytes = ChunkBytes + 8

// chunkBufs holds chunk buffers between transfers.
//
// decision: a sync.Pool, not a free list: a connection receives at most
// one transfer at a time (daemon-protocol.txt:104, :185), and the pool
// drops buffers nobody took back within two collections, so an idle
// daemon does not keep a transfer's 50 MiB.
var chunkBufs = sync.Pool{New: func() any { return new([chunkBufBytes]byte) }}

// ReleaseChunk gives back the data of a decoded chunk step once its
// receiver is done with it (staged, hashed and installed, or discarded).
// data must not be used afterwards, by anyone. Data that did not come from
// the pool is left to the collector, so releasing any chunk is safe; not
// releasing one only costs an allocation.
func ReleaseChunk(data []byte) {
	if cap(data) != chunkBufBytes {
		return
	}
	chunkBufs.Put((*[chunkBufBytes]byte)(data[:chunkBufBytes]))
}

// decodeChunkStep reads payload as {"step":"chunk","offset":N,"data":"…"}
// (members in any order, each once, whitespace allowed) and returns the
// offset and the decoded data, in a buffer of the pool. ok is false for
// any other payload, which the caller decodes the general way; nothing is
// taken from the pool then.
func decodeChunkStep(payload []byte) (offset int64, data []byte, ok bool) {
	var seen [3]bool // step, offset, data
	var rawData []byte
	i := skipSpace(payload, 0)
	if i >= len(payload) || payload[i] != '{' {
		return 0, nil, false
	}
	i = skipSpace(payload, i+1)
	for {
		// A member name: plain ASCII, no escape (one of three names).
		if i >= len(payload) || payload[i] != '"' {
			return 0, nil, false
		}
		q := bytes.IndexByte(payload[i+1:], '"')
		if q < 0 {
			return 0, nil, false
		}
		name := payload[i+1 : i+1+q]
		i = skipSpace(payload, i+q+2)
		if i >= len(payload) || payload[i] != ':' {
			return 0, nil, false
		}
		i = skipSpace(payload, i+1)
		slot := -1
		switch string(name) {
		case "step":
			slot = 0
			const v = `"chunk"`
			if !bytes.HasPrefix(payload[i:], []byte(v)) {
				return 0, nil, false
			}
			i += len(v)
		case "offset":
			slot = 1
			if i >= len(payload) {
				return 0, nil, false
			}
			end, good := scanNumber(payload, i)
			if !good || !fitsInt(payload[i:end], 64) {
				return 0, nil, false
			}
			n, err := strconv.ParseInt(string(payload[i:end]), 10, 64)
			if err != nil {
				return 0, nil, false
			}
			offset, i = n, end
		case "data":
			slot = 2
			if i >= len(payload) || payload[i] != '"' {
				return 0, nil, false
			}
			// The first quote ends the string unless a backslash escaped
			// it; a backslash is not base64, so the decoder refuses such
			// a string and the general path reads it.
			q := bytes.IndexByte(payload[i+1:], '"')
			if q < 0 {
				return 0, nil, false
			}
			rawData = payload[i+1 : i+1+q]
			i += q + 2
		default:
			return 0, nil, false
		}
		if seen[slot] {
			return 0, nil, false
		}
		seen[slot] = true
		i = skipSpace(payload, i)
		if i < len(payload) && payload[i] == ',' {
			i = skipSpace(payload, i+1)
			continue
		}
		if i >= len(payload) || payload[i] != '}' || skipSpace(payload, i+1) != len(payload) {
			return 0, nil, false
		}
		break
	}
	// A chunk without data, or with more than a chunk's bytes, is the
	// validator's to refuse, with its own words.
	if !seen[0] || !seen[2] || len(rawData) == 0 || len(rawData)%4 != 0 || len(rawData)/4*3 > ChunkBytes+2 {
		return 0, nil, false
	}
	buf := chunkBufs.Get().(*[chunkBufBytes]byte)
	n, good := decodeBase64Strict(buf[:], rawData)
	if !good || n > ChunkBytes {
		chunkBufs.Put(buf)
		return 0, nil, false
	}
	return offset, buf[:n:chunkBufBytes], true
}

// The decoding tables of decodeBase64Strict: the 6-bit value of each
// alphabet byte, already shifted to its place in a quartet's 24 bits, and
// b64Bad (above those bits) for every other byte, '=' included.
var b64d0, b64d1, b64d2, b64d3 [256]uint32

const (
	b64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	b64Bad      = 0xff000000
)

func init() {
	for i := range 256 {
		b64d0[i], b64d1[i], b64d2[i], b64d3[i] = b64Bad, b64Bad, b64Bad, b64Bad
	}
	for v := range len(b64Alphabet) {
		c, u := b64Alphabet[v], uint32(v)
		b64d0[c], b64d1[c], b64d2[c], b64d3[c] = u<<18, u<<12, u<<6, u
	}
}

// decodeBase64Strict decodes src, canonical padded standard base64 (what
// base64.StdEncoding.Strict() accepts, without the line breaks it skips),
// into dst and returns the number of bytes decoded. dst must hold the
// decoded bytes plus 2 of slack. ok is false for anything else: a length
// that is not a multiple of 4, a byte outside the alphabet, padding
// anywhere but at the end, non-zero padding bits.
//
// Why not encoding/base64: it looks at every byte for line breaks to skip
// and checks each byte's table entry on its own; here four table entries
// are ORed into a quartet and one test per two quartets finds any bad
// byte, which decodes a chunk in well under half the time (see
// BENCHMARKS.md, "Data path (issue 25)").
func decodeBase64Strict(dst, src []byte) (int, bool) {
	if len(src) == 0 || len(src)%4 != 0 {
		return 0, len(src) == 0
	}
	body := src[:len(src)-4] // every quartet but the last, which may be padded
	di := 0
	// Four quartets per step, then two: each pair stored as one big-endian
	// uint64 whose last two bytes the next store (or the tail) overwrites.
	for len(body) >= 16 && len(dst)-di >= 14 {
		s := body[:16:16]
		a := b64d0[s[0]] | b64d1[s[1]] | b64d2[s[2]] | b64d3[s[3]]
		b := b64d0[s[4]] | b64d1[s[5]] | b64d2[s[6]] | b64d3[s[7]]
		c := b64d0[s[8]] | b64d1[s[9]] | b64d2[s[10]] | b64d3[s[11]]
		d := b64d0[s[12]] | b64d1[s[13]] | b64d2[s[14]] | b64d3[s[15]]
		if (a|b|c|d)&b64Bad != 0 {
			return 0, false
		}
		o := dst[di : di+14 : di+14]
		binary.BigEndian.PutUint64(o[0:], uint64(a)<<40|uint64(b)<<16)
		binary.BigEndian.PutUint64(o[6:], uint64(c)<<40|uint64(d)<<16)
		body, di = body[16:], di+12
	}
	for len(body) >= 8 && len(dst)-di >= 8 {
		s := body[:8:8]
		a := b64d0[s[0]] | b64d1[s[1]] | b64d2[s[2]] | b64d3[s[3]]
		b := b64d0[s[4]] | b64d1[s[5]] | b64d2[s[6]] | b64d3[s[7]]
		if (a|b)&b64Bad != 0 {
			return 0, false
		}
		binary.BigEndian.PutUint64(dst[di:], uint64(a)<<40|uint64(b)<<16)
		body, di = body[8:], di+6
	}
	for len(body) >= 4 {
		s := body[:4:4]
		a := b64d0[s[0]] | b64d1[s[1]] | b64d2[s[2]] | b64d3[s[3]]
		if a&b64Bad != 0 || len(dst)-di < 3 {
			return 0, false
		}
		dst[di], dst[di+1], dst[di+2] = byte(a>>16), byte(a>>8), byte(a)
		body, di = body[4:], di+3
	}
	s := src[len(src)-4:]
	switch {
	case s[2] == '=' && s[3] == '=':
		a := b64d0[s[0]] | b64d1[s[1]]
		if a&b64Bad != 0 || a&0xffff != 0 || len(dst)-di < 1 {
			return 0, false
		}
		dst[di] = byte(a >> 16)
		return di + 1, true
	case s[3] == '=':
		a := b64d0[s[0]] | b64d1[s[1]] | b64d2[s[2]]
		if a&b64Bad != 0 || a&0xff != 0 || len(dst)-di < 2 {
			return 0, false
		}
		dst[di], dst[di+1] = byte(a>>16), byte(a>>8)
		return di + 2, true
	}
	a := b64d0[s[0]] | b64d1[s[1]] | b64d2[s[2]] | b64d3[s[3]]
	if a&b64Bad != 0 || len(dst)-di < 3 {
		return 0, false
	}
	dst[di], dst[di+1], dst[di+2] = byte(a>>16), byte(a>>8), byte(a)
	return di + 3, true
}
