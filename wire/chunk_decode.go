package wire

import (
	"bytes"
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
// a decoder (base64.go) that refuses every byte outside the base64 alphabet, so the
// strict scan of that string (UTF-8, control characters, escapes) has
// nothing left to find. Anything it does not recognise (another member, an
// escape, bad base64, a number that is not a plain integer) goes to the
// general path, which decodes or words the error exactly as before.
//
// The data is decoded into a buffer of its own rather than in place in the
// frame: the decoded message's envelope keeps its payload as a slice of the
// frame (Envelope.Payload), which a refusal may still log or quote.

// chunkBufBytes is the size of a pooled chunk buffer: a whole chunk plus
// room for DecodedLen of its padded text (up to 2 bytes more), rounded.
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
