package api

import (
	"slices"

	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/segmentio/asm/base64"
)

// writeContent writes c as writeJSON would, byte for byte (the same
// members, escaping and trailing newline), with the data's base64 encoded
// piece by piece straight into w (issue 25): through encoding/json a 1 MiB
// read was first a 1.4 MB buffer of its own, then written.
func writeContent(w http.ResponseWriter, c FilesContent) error {
	head, err := json.Marshal(struct {
		SessionID string `json:"session_id"`
		Path      string `json:"path"`
	}{c.SessionID, c.Path})
	if err != nil {
		return fmt.Errorf("files: encode the content's head: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bp := contentBufs.Get().(*[]byte)
	defer contentBufs.Put(bp)
	buf := append((*bp)[:0], head[:len(head)-1]...) // without its closing brace
	buf = append(buf, `,"data":"`...)
	data := c.Data
	for {
		// Whole groups of 3 bytes until the last piece, so that padding
		// comes only at the end, as one encoding of the whole would have it.
		n := min(len(data), contentPiece)
		// segmentio/asm's encoder (AVX2 where the processor has it), as
		// the wire package's encoders use: the same bytes, several times
		// faster than encoding/base64 (issue 25).
		e := base64.StdEncoding.EncodedLen(n)
		buf = slices.Grow(buf, e)
		base64.StdEncoding.Encode(buf[len(buf):len(buf)+e], data[:n])
		buf = buf[:len(buf)+e]
		data = data[n:]
		if len(data) == 0 {
			break
		}
		if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("files: write the content: %w", err)
		}
		buf = buf[:0]
	}
	buf = append(buf, `","size_bytes":`...)
	buf = strconv.AppendInt(buf, int64(c.SizeBytes), 10)
	buf = append(buf, `,"truncated":`...)
	buf = strconv.AppendBool(buf, c.Truncated)
	buf = append(buf, "}\n"...)
	*bp = buf
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("files: write the content: %w", err)
	}
	return nil
}

// contentPiece is how many data bytes are encoded per write: a multiple
// of 3 (no padding before the end).
const contentPiece = 48 << 10

// contentBufs hold one piece's base64 (64 KiB) and the members around it.
var contentBufs = sync.Pool{New: func() any {
	b := make([]byte, 0, base64.StdEncoding.EncodedLen(contentPiece)+1024)
	return &b
}}
