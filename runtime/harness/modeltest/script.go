package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Turn is one scripted answer of the model: the parts it streams in
// order, or an HTTP error instead of a stream.
//
// Consecutive Text parts form one message item (one text block), and
// consecutive Reasoning parts one reasoning item (one thinking block),
// even with Hold or Sleep parts between them; each call part is an item
// of its own.
type Turn struct {
	Parts []Part
	// Usage is reported when the stream completes; nil means DefaultUsage.
	Usage *Usage
	// StopReason is the Messages API stop_reason; "" means "tool_use"
	// when the turn calls a tool and "end_turn" otherwise.
	StopReason string
	// Error, when set, is the answer: its status and the provider's error
	// body, with no stream.
	Error *HTTPError

	// problem is a scripting mistake found when the turn was made.
	problem string
}

// Reply is a turn that streams parts.
func Reply(parts ...Part) Turn {
	t := Turn{Parts: parts}
	for _, p := range parts {
		if p.problem != "" {
			t.problem = p.problem
			break
		}
	}
	return t
}

// WithUsage returns the turn reporting u.
func (t Turn) WithUsage(u Usage) Turn {
	t.Usage = &u
	return t
}

// WithStopReason returns the turn with the Messages API stop_reason r.
func (t Turn) WithStopReason(r string) Turn {
	t.StopReason = r
	return t
}

// Fail is a turn answered with an HTTP error of status: the provider's
// error body with its usual type for the status, and message ("" gives
// the status text).
func Fail(status int, message string) Turn {
	return FailWith(HTTPError{Status: status, Message: message})
}

// FailWith is a turn answered with the HTTP error e.
func FailWith(e HTTPError) Turn {
	return Turn{Error: &e}
}

// ContextLengthExceeded is a turn answered as a provider answers a prompt
// longer than the model's context window: 400 with code
// context_length_exceeded (Responses API) or "prompt is too long"
// (Messages API).
func ContextLengthExceeded() Turn {
	return FailWith(HTTPError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: CodeContextLengthExceeded})
}

// CodeContextLengthExceeded is the Responses API error code of a prompt
// that does not fit the context window.
const CodeContextLengthExceeded = "context_length_exceeded"

// HTTPError is an error answer. Empty fields get the provider's usual
// values for the status.
type HTTPError struct {
	Status int
	// Type is error.type in the OpenAI and Anthropic APIs, and
	// error.status (INVALID_ARGUMENT, NOT_FOUND, …) in the Gemini API.
	Type string
	// Code is error.code in the Responses API (null when empty); the
	// Messages API has no code.
	Code string
	// Message is error.message.
	Message string
	// Header is added to the answer (Retry-After, say).
	Header http.Header
}

// Usage is the token usage a turn reports, as the wire carries it.
type Usage struct {
	// InputTokens is input_tokens in both APIs (the Messages API counts
	// uncached input only; the Responses API counts all of it).
	InputTokens int64
	// CachedTokens is input_tokens_details.cached_tokens (Responses) and
	// cache_read_input_tokens (Messages).
	CachedTokens int64
	// CacheWriteTokens is cache_creation_input_tokens (Messages only).
	CacheWriteTokens int64
	// OutputTokens is output_tokens in both APIs.
	OutputTokens int64
	// ReasoningTokens is output_tokens_details.reasoning_tokens
	// (Responses only).
	ReasoningTokens int64
}

// TotalTokens is the Responses API total_tokens: input plus output.
func (u Usage) TotalTokens() int64 { return u.InputTokens + u.OutputTokens }

// DefaultUsage is the usage of a turn that sets none.
func DefaultUsage() Usage {
	return Usage{InputTokens: 120, CachedTokens: 20, OutputTokens: 30, ReasoningTokens: 8}
}

type partKind int

const (
	partText partKind = iota + 1
	partReasoning
	partFunctionCall
	partCustomToolCall
	partHold
	partSleep
	partDrop
	partStreamError
	partSeq
)

// Part is one piece of a turn. Make parts with Text, Reasoning,
// FunctionCall, CustomToolCall, Hold, Sleep, Drop, StreamError and Seq
// (and the tool helpers built on them).
type Part struct {
	kind      partKind
	deltas    []string
	name      string
	callID    string
	arguments string
	signature string
	gate      *Gate
	delay     time.Duration
	err       *HTTPError
	seq       []Part
	problem   string
}

// Text streams assistant text, one delta per argument.
func Text(deltas ...string) Part {
	return Part{kind: partText, deltas: deltas}
}

// Reasoning streams reasoning: a reasoning summary in the Responses API,
// a thinking block (with a signature) in the Messages API. Each argument
// is one delta.
func Reasoning(deltas ...string) Part {
	return Part{kind: partReasoning, deltas: deltas}
}

// WithSignature returns a Reasoning part whose thinking block carries sig
// instead of a generated signature.
func (p Part) WithSignature(sig string) Part {
	p.signature = sig
	return p
}

// FunctionCall calls the function tool name with args: a function_call
// item (Responses API) or a tool_use block (Messages API). args is
// marshalled to JSON, except json.RawMessage, []byte and string, which
// are taken as JSON text. The Messages API needs an object.
func FunctionCall(name string, args any) Part {
	p := Part{kind: partFunctionCall, name: name}
	switch a := args.(type) {
	case json.RawMessage:
		p.arguments = string(a)
	case []byte:
		p.arguments = string(a)
	case string:
		p.arguments = a
	default:
		b, err := json.Marshal(args)
		if err != nil {
			p.problem = fmt.Sprintf("function call %s: encode arguments: %v", name, err)
		}
		p.arguments = string(b)
	}
	if p.problem == "" && !json.Valid([]byte(p.arguments)) {
		p.problem = fmt.Sprintf("function call %s: arguments are not JSON: %q", name, p.arguments)
	}
	return p
}

// CustomToolCall calls the freeform custom tool name with input: a
// custom_tool_call item. The Messages API has no such call; a turn with
// one fails there.
func CustomToolCall(name, input string) Part {
	return Part{kind: partCustomToolCall, name: name, arguments: input}
}

// WithCallID returns a call part with the call id id (call_id in the
// Responses API, the tool_use id in the Messages API) instead of a
// generated one.
func (p Part) WithCallID(id string) Part {
	p.callID = id
	return p
}

// Hold pauses the stream until g opens; what was streamed before it has
// been flushed to the client when g reports Reached. A stream whose
// client leaves, or whose server closes, while held ends there.
func Hold(g *Gate) Part {
	return Part{kind: partHold, gate: g}
}

// Sleep pauses the stream for d of real time, for end-to-end runs of a
// slow model. Tests that assert on timing use Hold instead.
func Sleep(d time.Duration) Part {
	return Part{kind: partSleep, delay: d}
}

// Drop closes the connection at this point of the stream, without
// completing it.
func Drop() Part {
	return Part{kind: partDrop}
}

// StreamError ends the stream with a provider error event: response.failed
// with response.error {code, message} (Responses API) or an error event
// (Messages API).
func StreamError(e HTTPError) Part {
	return Part{kind: partStreamError, err: &e}
}

// Seq groups parts into one, so that a helper can return several.
func Seq(parts ...Part) Part {
	p := Part{kind: partSeq, seq: parts}
	for _, q := range parts {
		if q.problem != "" {
			p.problem = q.problem
			break
		}
	}
	return p
}

// SlowText streams text deltas with a real pause of d between them.
func SlowText(d time.Duration, deltas ...string) Part {
	parts := make([]Part, 0, 2*len(deltas))
	for i, delta := range deltas {
		if i > 0 {
			parts = append(parts, Sleep(d))
		}
		parts = append(parts, Text(delta))
	}
	return Seq(parts...)
}

// Gate holds a stream (see Hold) until the test opens it.
type Gate struct {
	open      chan struct{}
	reached   chan struct{}
	openOnce  sync.Once
	reachOnce sync.Once
}

// NewGate returns a closed gate.
func NewGate() *Gate {
	return &Gate{open: make(chan struct{}), reached: make(chan struct{})}
}

// Open lets every stream held at the gate, and every later one, through.
// It may be called more than once.
func (g *Gate) Open() { g.openOnce.Do(func() { close(g.open) }) }

// Reached is closed when a stream first arrives at the gate, after what it
// streamed before was flushed.
func (g *Gate) Reached() <-chan struct{} { return g.reached }

func (g *Gate) arrive() { g.reachOnce.Do(func() { close(g.reached) }) }

// Responder answers a request with a turn. It runs on the server's
// goroutine and must not block for long.
type Responder func(*Request) Turn

// DefaultTurn is the answer when the script is empty: when the request's
// last input is a tool result, the text "Tool said: " and its output;
// otherwise a short reasoning and "Hello from the scripted model.".
func DefaultTurn(r *Request) Turn {
	if tr, ok := r.LastToolResult(); ok {
		return Reply(Text("Tool said: ", tr.Output))
	}
	return Reply(
		Reasoning("The user ", "greets me; ", "answer briefly."),
		Text("Hello ", "from the scripted ", "model."),
	)
}

// OnToolResult answers a request whose last input is a tool result with
// fn's turn. Any other request is a scripting mistake: the test fails
// and the client gets a 500.
func OnToolResult(fn func(ToolResult) Turn) Responder {
	return func(r *Request) Turn {
		tr, ok := r.LastToolResult()
		if !ok {
			return Turn{problem: fmt.Sprintf("request %d: the last input is not a tool result", r.Seq)}
		}
		return fn(tr)
	}
}

// EchoToolResult answers a request whose last input is a tool result with
// the text fmt.Sprintf(format, output), output being the result's text
// (see OnToolResult).
func EchoToolResult(format string) Responder {
	return OnToolResult(func(tr ToolResult) Turn {
		return Reply(Text(fmt.Sprintf(format, tr.Output)))
	})
}

// Always is a responder that answers every request with t.
func Always(t Turn) Responder {
	return func(*Request) Turn { return t }
}

// errorFor fills e's empty fields with the provider's usual values.
func errorFor(api API, e HTTPError) HTTPError {
	if e.Status == 0 {
		e.Status = http.StatusInternalServerError
	}
	if api == APIGemini {
		// A type written for the other APIs (lowercase, as
		// ContextLengthExceeded's) is not a Google status name: the
		// status's canonical name replaces it, so one script fails the same
		// way whichever API a CLI speaks.
		if e.Type == "" || strings.ToUpper(e.Type) != e.Type {
			e.Type = geminiStatus(e.Status)
		}
		if e.Message == "" && e.Code == CodeContextLengthExceeded {
			e.Message = "The input token count (1048577) exceeds the maximum number of tokens allowed (1048576)."
		}
	} else if api == APIMessages || api == APICountTokens {
		if e.Type == "" {
			e.Type = anthropicErrorType(e.Status)
		}
		if e.Message == "" && e.Code == CodeContextLengthExceeded {
			e.Message = "prompt is too long: 210000 tokens > 200000 maximum"
		}
	} else {
		if e.Type == "" || e.Code == "" {
			typ, code := openAIErrorType(e.Status)
			if e.Type == "" {
				e.Type = typ
			}
			if e.Code == "" {
				e.Code = code
			}
		}
		if e.Message == "" && e.Code == CodeContextLengthExceeded {
			e.Message = "Your input exceeds the context window of this model. Please adjust your input and try again."
		}
	}
	if e.Message == "" && e.Status == 529 {
		e.Message = "Overloaded"
	}
	if e.Message == "" {
		e.Message = strings.ToLower(http.StatusText(e.Status))
		if e.Message == "" {
			e.Message = fmt.Sprintf("status %d", e.Status)
		}
	}
	return e
}

func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func openAIErrorType(status int) (typ, code string) {
	switch status {
	case http.StatusUnauthorized:
		return "invalid_request_error", "invalid_api_key"
	case http.StatusForbidden:
		return "permission_error", ""
	case http.StatusNotFound:
		return "invalid_request_error", "model_not_found"
	case http.StatusTooManyRequests:
		return "requests", "rate_limit_exceeded"
	}
	if status >= 500 {
		return "server_error", ""
	}
	return "invalid_request_error", ""
}
