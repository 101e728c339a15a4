package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// readUpload reads a workspace write's body (at most MaxWriteBody bytes)
// under the upload's read deadline, streaming it to a file in UploadDir as
// it arrives; only a body that arrived whole is read back into memory,
// for the write that follows.
//
// decision: a body that trickles in, or stops, costs a file on disk and a
// copy buffer, not memory growing with what it sent so far: 150 stalled
// uploads of 5 MiB once held ~810 MiB of Core's memory. The deadline
// (Timeouts.Upload) ends one that never finishes; the file is removed
// whatever happens.
//
// It answers the request itself and returns ok false when the body was
// refused: 408 upload_timeout, 413 body_too_large or 400.
func (a *API) readUpload(w http.ResponseWriter, r *http.Request) (body []byte, ok bool) {
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(a.cfg.Timeouts.upload())) == nil
	f, err := os.CreateTemp(a.cfg.UploadDir, "upload-*")
	if err != nil {
		a.internal(w, "upload: create the body's file", err)
		return nil, false
	}
	defer func() {
		_ = f.Close()
		_ = os.Remove(f.Name())
	}()
	n, err := io.Copy(f, io.LimitReader(r.Body, MaxWriteBody+1))
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusRequestTimeout, Error{Error: "upload_timeout", Field: "body",
				Detail: fmt.Sprintf("the body did not arrive within %v", a.cfg.Timeouts.upload())})
			return nil, false
		}
		var pe *os.PathError
		if errors.As(err, &pe) { // the file, not the body
			a.internal(w, "upload: store the body", err)
			return nil, false
		}
		badField(w, "body", "the body could not be read")
		return nil, false
	}
	if n > MaxWriteBody {
		writeJSON(w, http.StatusRequestEntityTooLarge, Error{Error: "body_too_large", Field: "body", Detail: "the body is over the 5 MiB inline bound"})
		return nil, false
	}
	if deadline {
		// The body is in; the write may wait on a Runtime longer than
		// the upload's deadline, and the server's background read must
		// not cancel it (deadlines.go).
		_ = rc.SetReadDeadline(time.Time{})
	}
	body = make([]byte, n)
	if _, err := f.ReadAt(body, 0); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
		a.internal(w, "upload: read the body back", err)
		return nil, false
	}
	return body, true
}
