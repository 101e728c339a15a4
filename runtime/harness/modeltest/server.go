package modeltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// maxBody bounds a request body the server reads.
const maxBody = 64 << 20

// DefaultModel is the model named in answers to requests that name none,
// and the model GET /v1/models lists unless WithModels says otherwise.
const DefaultModel = "scripted-model"

// Server is a scripted model endpoint on 127.0.0.1. Make one with New.
type Server struct {
	t  testing.TB
	hs *httptest.Server

	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	queue     []Responder
	fallback  Responder
	strict    bool
	models    []string
	reqs      []*Request
	turns     []*Request
	notify    chan struct{}
	nextID    int
	problems  []string
	closeOnce sync.Once
}

// Option configures a Server.
type Option func(*Server)

// WithTurns scripts turns, answered in order.
func WithTurns(turns ...Turn) Option {
	return func(s *Server) { s.enqueue(turnResponders(turns)...) }
}

// WithResponders scripts turns computed from the requests, answered in
// order.
func WithResponders(fns ...Responder) Option {
	return func(s *Server) { s.enqueue(fns...) }
}

// WithFallback answers the requests that find the script empty with fn
// instead of DefaultTurn.
func WithFallback(fn Responder) Option {
	return func(s *Server) { s.fallback = fn }
}

// WithStrictScript makes a request that finds the script empty a test
// failure (the client gets a 500).
func WithStrictScript() Option {
	return func(s *Server) { s.strict = true }
}

// WithModels sets the model ids GET /v1/models lists.
func WithModels(ids ...string) Option {
	return func(s *Server) { s.models = append([]string(nil), ids...) }
}

// New starts a server for the test t on 127.0.0.1 with an ephemeral port;
// it is closed when the test ends (t.Cleanup), releasing held streams
// first. A scripting mistake found while answering fails t.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := start(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Start starts a server outside a test (an example, a manual run) on
// 127.0.0.1 with an ephemeral port. The caller closes it; scripting
// mistakes are only reported by Problems.
func Start(opts ...Option) (*Server, error) {
	return start(nil, opts)
}

func start(t testing.TB, opts []Option) (*Server, error) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{t: t, ctx: ctx, cancel: cancel, fallback: DefaultTurn, models: []string{DefaultModel}, notify: make(chan struct{})}
	for _, opt := range opts {
		opt(s)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		return nil, fmt.Errorf("modeltest: listen on 127.0.0.1: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/responses", s.serveTurn(APIResponses))
	mux.HandleFunc("POST /v1/messages", s.serveTurn(APIMessages))
	mux.HandleFunc("POST /v1/messages/count_tokens", s.serveCountTokens)
	mux.HandleFunc("POST /v1beta/models/{model}", s.serveGemini)
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("/", s.serveUnknown)
	s.hs = &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux, ReadHeaderTimeout: time.Minute}}
	s.hs.Start()
	return s, nil
}

// Problems is the scripting mistakes met so far (a New server also fails
// its test with each).
func (s *Server) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.problems...)
}

// URL is the server's root, "http://127.0.0.1:PORT": the Anthropic base
// URL (ANTHROPIC_BASE_URL) and the Gemini one (GOOGLE_GEMINI_BASE_URL).
func (s *Server) URL() string { return s.hs.URL }

// OpenAIBaseURL is URL + "/v1": the OpenAI base URL (a Codex provider's
// base_url).
func (s *Server) OpenAIBaseURL() string { return s.hs.URL + "/v1" }

// Client is an HTTP client for the server; its idle connections are
// closed with the server.
func (s *Server) Client() *http.Client { return s.hs.Client() }

// Close ends held streams and stops the server, waiting for its handlers.
// It is called by t.Cleanup; calling it earlier is allowed.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.cancel()
		s.hs.Close()
	})
}

func turnResponders(turns []Turn) []Responder {
	out := make([]Responder, len(turns))
	for i, t := range turns {
		out[i] = Always(t)
	}
	return out
}

func (s *Server) enqueue(fns ...Responder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, fns...)
}

// Enqueue appends turns to the script.
func (s *Server) Enqueue(turns ...Turn) { s.enqueue(turnResponders(turns)...) }

// EnqueueFunc appends turns computed from their requests to the script.
func (s *Server) EnqueueFunc(fns ...Responder) { s.enqueue(fns...) }

// SetFallback answers the requests that find the script empty with fn.
func (s *Server) SetFallback(fn Responder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = fn
}

// Pending is how many scripted turns are not answered yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests is every request received, in order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.reqs...)
}

// TurnRequests is the requests that asked for a turn, in order.
func (s *Server) TurnRequests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.turns...)
}

// Await waits for the n-th request asking for a turn (counting from 1),
// recorded before its answer starts.
func (s *Server) Await(ctx context.Context, n int) (*Request, error) {
	return s.await(ctx, n, true)
}

// AwaitRequest waits for the n-th request of any kind (counting from 1).
func (s *Server) AwaitRequest(ctx context.Context, n int) (*Request, error) {
	return s.await(ctx, n, false)
}

func (s *Server) await(ctx context.Context, n int, turns bool) (*Request, error) {
	if n < 1 {
		return nil, fmt.Errorf("modeltest: await request %d: counting starts at 1", n)
	}
	for {
		s.mu.Lock()
		list := s.reqs
		if turns {
			list = s.turns
		}
		if len(list) >= n {
			r := list[n-1]
			s.mu.Unlock()
			return r, nil
		}
		ch := s.notify
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("modeltest: await request %d (%d received): %w", n, len(list), context.Cause(ctx))
		}
	}
}

// id mints an id with prefix, unique in this server.
func (s *Server) id(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	return fmt.Sprintf("%s_modeltest_%04d", prefix, s.nextID)
}

// record reads r's body and records it; for a turn request it also takes
// the responder that answers it, under the same lock, so that turns are
// answered in the order requests were recorded.
func (s *Server) record(r *http.Request, api API, turn bool) (*Request, Responder, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return nil, nil, fmt.Errorf("modeltest: read %s %s body: %w", r.Method, r.URL.Path, err)
	}
	rec := newRequest(r, api, b)
	s.mu.Lock()
	defer s.mu.Unlock()
	rec.Seq = len(s.reqs) + 1
	var fn Responder
	if turn && rec.Body != nil {
		rec.TurnSeq = len(s.turns) + 1
		switch {
		case len(s.queue) > 0:
			fn = s.queue[0]
			s.queue = s.queue[1:]
		case s.strict:
			fn = func(r *Request) Turn {
				return Turn{problem: fmt.Sprintf("turn request %d found the script empty", r.TurnSeq)}
			}
		default:
			fn = s.fallback
		}
		s.turns = append(s.turns, rec)
	}
	s.reqs = append(s.reqs, rec)
	close(s.notify)
	s.notify = make(chan struct{})
	return rec, fn, nil
}

// handlerContext ends when the client leaves or the server closes.
func (s *Server) handlerContext(r *http.Request) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(r.Context())
	stop := context.AfterFunc(s.ctx, func() { cancel(errors.New("modeltest: server closed")) })
	return ctx, func() { stop(); cancel(nil) }
}

func (s *Server) serveTurn(api API) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rec, fn, err := s.record(r, api, true)
		if err != nil {
			s.writeError(w, api, HTTPError{Status: http.StatusBadRequest, Message: err.Error()})
			return
		}
		if rec.Body == nil {
			s.writeError(w, api, HTTPError{Status: http.StatusBadRequest, Type: "invalid_request_error",
				Message: "modeltest: the body is not a JSON object: " + rec.DecodeError})
			return
		}
		turn := fn(rec)
		s.answer(w, r, rec, turn)
	}
}

// scriptProblem fails the test for a scripting mistake and answers 500.
func (s *Server) scriptProblem(w http.ResponseWriter, rec *Request, problem string) {
	msg := fmt.Sprintf("modeltest: %s %s (request %d): %s", rec.Method, rec.Path, rec.Seq, problem)
	s.mu.Lock()
	s.problems = append(s.problems, msg)
	s.mu.Unlock()
	if s.t != nil {
		s.t.Errorf("%s", msg)
	}
	s.writeError(w, rec.API, HTTPError{Status: http.StatusInternalServerError, Type: "api_error", Message: "modeltest: " + problem})
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, rec *Request, turn Turn) {
	if turn.problem != "" {
		s.scriptProblem(w, rec, turn.problem)
		return
	}
	if turn.Error != nil {
		s.writeError(w, rec.API, *turn.Error)
		return
	}
	p, err := buildPlan(turn, rec.API, s.id)
	if err == nil && rec.API == APIMessages {
		err = validateMessages(p)
	}
	if err == nil && rec.API == APIGemini {
		err = validateGemini(p)
	}
	if err != nil {
		s.scriptProblem(w, rec, err.Error())
		return
	}
	model := rec.Model()
	if model == "" {
		model = DefaultModel
	}
	ctx, done := s.handlerContext(r)
	defer done()
	if !rec.Stream() {
		s.answerWhole(ctx, w, rec, p, model)
		return
	}
	sw := newSSEWriter(w)
	stopDeadline := context.AfterFunc(ctx, func() {
		// A client that stopped reading must not keep Close waiting.
		_ = sw.rc.SetWriteDeadline(time.Now())
	})
	defer stopDeadline()
	var st streamer
	switch rec.API {
	case APIResponses:
		st = newResponsesStream(sw, p, s.id("resp"), model, time.Now())
	case APIGemini:
		st = &geminiStreamer{sw: sw, p: p, model: model, id: s.id("gen")}
	default:
		st = &messagesStream{sw: sw, p: p, id: s.id("msg"), model: model}
	}
	if err := runPlan(ctx, p, st); err != nil {
		// A Drop, a client that left or a server closing mid-stream: the
		// connection is cut, not the stream ended cleanly.
		panic(http.ErrAbortHandler)
	}
}

// answerWhole answers a request that did not ask for a stream.
func (s *Server) answerWhole(ctx context.Context, w http.ResponseWriter, rec *Request, p *plan, model string) {
	failed, err := pauseAll(ctx, p)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if failed != nil {
		s.writeError(w, rec.API, *failed)
		return
	}
	var body any
	switch rec.API {
	case APIResponses:
		body = responsesFinal(p, s.id("resp"), model, time.Now())
	case APIGemini:
		body, err = geminiFinal(p, model, s.id("gen"))
		if err != nil {
			s.scriptProblem(w, rec, err.Error())
			return
		}
	default:
		body, err = messagesFinal(p, s.id("msg"), model)
		if err != nil {
			s.scriptProblem(w, rec, err.Error())
			return
		}
	}
	writeJSON(w, http.StatusOK, nil, body)
}

// writeError answers e in the shape of api's provider.
func (s *Server) writeError(w http.ResponseWriter, api API, e HTTPError) {
	e = errorFor(api, e)
	var body any
	switch api {
	case APIMessages, APICountTokens:
		body = messagesError(e, s.id("req"))
	case APIGemini:
		body = geminiError(e)
	default:
		body = responsesError(e)
	}
	writeJSON(w, e.Status, e.Header, body)
}

func writeJSON(w http.ResponseWriter, status int, header http.Header, body any) {
	b, err := json.Marshal(body)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(fmt.Sprintf(`{"error":{"message":%q,"type":"server_error"}}`, "modeltest: encode body: "+err.Error()))
	}
	for k, vs := range header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func (s *Server) serveCountTokens(w http.ResponseWriter, r *http.Request) {
	rec, _, err := s.record(r, APICountTokens, false)
	if err != nil {
		s.writeError(w, APICountTokens, HTTPError{Status: http.StatusBadRequest, Message: err.Error()})
		return
	}
	n := int64(len(rec.RawBody) / 4)
	if n < 1 {
		n = 1
	}
	writeJSON(w, http.StatusOK, nil, map[string]any{"input_tokens": n})
}

// serveModels lists the models both ways: "data" as the OpenAI and
// Anthropic model lists have it, and an empty "models", which Codex reads
// as no remote model metadata (it keeps its built-in presets).
func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	if _, _, err := s.record(r, APIModels, false); err != nil {
		s.writeError(w, APIModels, HTTPError{Status: http.StatusBadRequest, Message: err.Error()})
		return
	}
	s.mu.Lock()
	ids := append([]string(nil), s.models...)
	s.mu.Unlock()
	data := make([]any, 0, len(ids))
	for _, id := range ids {
		data = append(data, map[string]any{
			"id": id, "object": "model", "type": "model", "created": 0, "created_at": "1970-01-01T00:00:00Z",
			"owned_by": "modeltest", "display_name": id,
		})
	}
	body := map[string]any{"object": "list", "data": data, "models": []any{}, "has_more": false}
	if len(ids) > 0 {
		body["first_id"], body["last_id"] = ids[0], ids[len(ids)-1]
	}
	writeJSON(w, http.StatusOK, nil, body)
}

func (s *Server) serveUnknown(w http.ResponseWriter, r *http.Request) {
	_, _, _ = s.record(r, APIUnknown, false)
	s.writeError(w, APIUnknown, HTTPError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "unknown_url",
		Message: fmt.Sprintf("modeltest: no endpoint for %s %s", r.Method, r.URL.Path)})
}
