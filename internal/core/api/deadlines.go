package api

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// Deadlines per route class. Core's http.Server sets no whole-request
// ReadTimeout or WriteTimeout, because an event stream lasts as long as
// its Turn and an upload as long as its body takes; each class bounds
// itself here instead, on the request's connection (http.ResponseController).
//
//   - ordinary routes: the body within BodyTimeout, the answer within
//     WriteTimeout;
//   - the event stream (GET .../events): its own write deadline per flush
//     and its stall bound (turns.go), nothing here;
//   - the upload (PUT .../files/content): its body within UploadTimeout,
//     streamed to a file meanwhile (upload.go), the answer within
//     WriteTimeout.
const (
	DefaultBodyTimeout   = 30 * time.Second
	DefaultUploadTimeout = 2 * time.Minute
	DefaultWriteTimeout  = 5 * time.Minute
)

// Timeouts are the deadlines of the route classes; a zero field takes its
// default.
type Timeouts struct {
	Body, Upload, Write time.Duration
}

func (t Timeouts) body() time.Duration   { return orDefault(t.Body, DefaultBodyTimeout) }
func (t Timeouts) upload() time.Duration { return orDefault(t.Upload, DefaultUploadTimeout) }
func (t Timeouts) write() time.Duration  { return orDefault(t.Write, DefaultWriteTimeout) }

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// routeClass names a route's deadlines.
type routeClass int

const (
	classOrdinary routeClass = iota
	classStream
	classUpload
)

func classOf(r Route) routeClass {
	switch r {
	case Route{"GET", "/api/v1/turns/{turn_id}/events"}, Route{"GET", "/api/v1/sessions/{session_id}/export"}:
		// decision: an export streams a tar of unbounded length as the
		// Runtime sends it, like the event stream; its writes are bounded
		// by the transfer's own deadlines (files_export.go), not here.
		return classStream
	case Route{"PUT", "/api/v1/sessions/{session_id}/files/content"}:
		return classUpload
	}
	return classOrdinary
}

// withDeadlines sets the class's deadlines around next. The write
// deadline is cleared when the handler returns, since the server sets
// none itself and the connection may carry another request.
//
// The body's read deadline is cleared once the body is read: the server
// reads the connection in the background after that to notice a client
// that went away, and a deadline passing then would cancel the request's
// context while its handler still works (a wait on a Runtime, say). A
// request without a body gets no read deadline for the same reason.
func (a *API) withDeadlines(class routeClass, next http.HandlerFunc) http.HandlerFunc {
	if class == classStream {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if rc.SetWriteDeadline(time.Now().Add(a.cfg.Timeouts.write())) == nil {
			defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
		}
		if class == classOrdinary && r.Body != nil && r.Body != http.NoBody &&
			rc.SetReadDeadline(time.Now().Add(a.cfg.Timeouts.body())) == nil {
			// Left set when the handler did not read the body to its end:
			// the server then discards the rest under the same deadline.
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		}
		next(w, r)
	}
}

// deadlineBody clears the connection's read deadline at the body's end.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	once sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.clear()
	}
	return n, err
}

func (b *deadlineBody) clear() { b.once.Do(func() { _ = b.rc.SetReadDeadline(time.Time{}) }) }
