package wire

import "strconv"

// Run events travel from the Runtime to Core under the Run ID. They report
// what the Harness observed while one execution ran; none of them is a
// receipt for a Core request. An execution error is followed by done, which
// closes the stream.
//
// Sequences. The reference leaves the origin of delta and thinking sequences
// open, and its peers send a delta with sequence 0.
//
// decision: a sequence is any non-negative integer, 0 included, and an
// absent one reads as 0. Frames of a Run are ordered by the connection
// itself (daemon-protocol.txt:15: ordered JSON envelopes), so the sequence
// is a diagnostic label that no rule of this package relies on; refusing 0
// would only refuse the reference's first delta.

// Values of OutputMessage.Status.
const (
	OutputInProgress = "in_progress"
	OutputCompleted  = "completed"
	OutputIncomplete = "incomplete"
)

// Values of ToolCall.Stage.
const (
	ToolStageBefore = "before"
	ToolStageAfter  = "after"
)

// Delta is a fragment of assistant text. ItemID names the native message
// the fragment belongs to; it is reported only when Core opted in with
// observe_messages (the Runtime declares message_items).
type Delta struct {
	ItemID string `json:"item_id,omitempty"`
	// Delta is the text fragment. It is never trimmed: whitespace-only
	// fragments are real output, but an empty fragment carries nothing and
	// is rejected.
	Delta string `json:"delta"`
	// Sequence labels fragments of one Run; see the decision above.
	Sequence uint64 `json:"sequence"`
}

// Validate checks a delta with paths relative to the payload.
func (p Delta) Validate() error {
	c := newChecker("")
	c.notBlankWhenSet("item_id", p.ItemID)
	if p.Delta == "" {
		c.fail("delta", RuleRequired, "a delta carries at least one character")
	}
	return c.err()
}

// Thinking is a fragment of reasoning text. Its sequence shares the
// meaning of Delta.Sequence.
type Thinking struct {
	Text     string `json:"text"`
	Sequence uint64 `json:"sequence,omitempty"`
}

// Validate checks a thinking fragment; like a delta, its text is never
// trimmed but must not be empty.
func (p Thinking) Validate() error {
	c := newChecker("")
	if p.Text == "" {
		c.fail("text", RuleRequired, "a thinking fragment carries at least one character")
	}
	return c.err()
}

// OutputMessage reports the start, the completion and the phase of one
// native assistant message, and its completion text. It is sent only to a
// Core that opted in with observe_messages. ID matches Delta.ItemID.
type OutputMessage struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	// Phase is the native phase label (for example "commentary"); open-ended.
	Phase string `json:"phase,omitempty"`
	// Text is the snapshot of the whole message at completion. A pointer,
	// because an empty completed message differs from one whose text is
	// unknown. A message that has only started has no snapshot yet, so Text
	// is forbidden with in_progress.
	Text *string `json:"text,omitempty"`
}

// Validate checks an output message with paths relative to the payload.
func (p OutputMessage) Validate() error {
	c := newChecker("")
	c.required("id", p.ID)
	c.oneOf("status", p.Status, OutputInProgress, OutputCompleted, OutputIncomplete)
	c.notBlankWhenSet("phase", p.Phase)
	c.forbidden("text", p.Text != nil && p.Status == OutputInProgress, "an in_progress message has no completion text yet")
	return c.err()
}

// ToolCall reports one stage of a tool call. The before stage is sent when
// the Harness is about to call the tool, the after stage when its result is
// back; both carry the same ID. Observation is the engine-neutral snapshot
// Core asked for with observe_tool_observations.
//
// Unlike the reference, which decoded only this frame strictly, every frame
// of this package rejects unknown members at any depth, naming the full
// path ("observation.content[1].mime"). Args and Result are opaque native
// objects, not inspected beyond being JSON objects.
//
// decision: Name may be empty. It is a display label, not an identity (ID
// pairs the stages), and the reference's Runtime sends observation-only
// tool calls with "name":""; the protocol text asks nothing of the name
// (daemon-protocol.txt:55 only says tool-call frames carry the
// observation).
type ToolCall struct {
	ID          string           `json:"id"`
	Name        string           `json:"name"`
	Stage       string           `json:"stage"`
	Args        NativeJSON       `json:"args,omitempty"`
	Result      NativeJSON       `json:"result,omitempty"`
	Observation *ToolObservation `json:"observation,omitempty"`
}

// Validate checks a tool call with paths relative to the payload. A result
// is what comes back from the tool, so it is forbidden before the call.
func (p ToolCall) Validate() error {
	c := newChecker("")
	c.required("id", p.ID)
	c.oneOf("stage", p.Stage, ToolStageBefore, ToolStageAfter)
	c.nativeJSON("args", p.Args, optionalObject)
	c.nativeJSON("result", p.Result, optionalObject)
	c.forbidden("result", len(p.Result) > 0 && p.Stage == ToolStageBefore, "a tool has no result before it is called")
	if p.Observation != nil {
		c.nested("observation", p.Observation.validate())
	}
	return c.err()
}

// ToolObservation is an engine-neutral snapshot of one tool execution, not
// a public API item. Kind and Status are open labels chosen by the adapter
// ("command", "mcp", "function", …; "in_progress", "completed", "failed",
// …): the protocol does not close either set, so only their presence is
// checked. Pointers and raw values keep "absent" apart from a zero value or
// an explicit JSON null, which adapters use to say "no output yet".
type ToolObservation struct {
	Kind       string     `json:"kind"`
	Status     string     `json:"status"`
	Name       string     `json:"name,omitempty"`
	Command    string     `json:"command,omitempty"`
	Cwd        *string    `json:"cwd,omitempty"`
	ExitCode   *int64     `json:"exit_code,omitempty"`
	DurationMS *int64     `json:"duration_ms,omitempty"`
	Server     string     `json:"server,omitempty"`
	Arguments  NativeJSON `json:"arguments,omitempty"`
	Output     NativeJSON `json:"output,omitempty"`
	Error      NativeJSON `json:"error,omitempty"`
	// Content is the tool's content output. A pointer, so that an explicit
	// empty list (no content) differs from content that was not observed.
	Content *[]InputContent      `json:"content,omitempty"`
	Action  *ToolWebSearchAction `json:"action,omitempty"`
}

// ToolWebSearchAction describes what a web search tool did: searched for
// Query or Queries, opened URL, or looked for Pattern in a page.
type ToolWebSearchAction struct {
	Type  string  `json:"type"`
	Query *string `json:"query,omitempty"`
	// Queries is a pointer so that an explicit empty list survives a round
	// trip instead of collapsing into an absent one.
	Queries *[]string `json:"queries,omitempty"`
	URL     *string   `json:"url,omitempty"`
	Pattern *string   `json:"pattern,omitempty"`
}

func (o ToolObservation) validate() *FieldError {
	c := newChecker("")
	c.required("kind", o.Kind)
	c.required("status", o.Status)
	c.notBlankWhenSet("name", o.Name)
	c.notBlankWhenSet("command", o.Command)
	if o.Cwd != nil {
		c.required("cwd", *o.Cwd)
	}
	if o.DurationMS != nil && *o.DurationMS < 0 {
		c.fail("duration_ms", RuleRange, "must not be negative")
	}
	c.notBlankWhenSet("server", o.Server)
	c.nativeJSON("arguments", o.Arguments, anyJSON)
	c.nativeJSON("output", o.Output, anyJSON)
	c.nativeJSON("error", o.Error, anyJSON)
	if o.Content != nil {
		for i, ct := range *o.Content {
			c.nested("content["+strconv.Itoa(i)+"]", ct.validate(textNonEmpty))
		}
	}
	if o.Action != nil {
		a := o.Action
		c.required("action.type", a.Type)
		if a.Queries != nil {
			for i, q := range *a.Queries {
				c.required("action.queries["+strconv.Itoa(i)+"]", q)
			}
		}
	}
	return c.first
}

// ErrorFrame reports an execution error. Done always follows it, and the
// errors before done remain part of the outcome.
//
// Code and HTTPStatus are optional, neutral classification metadata. The
// protocol requires that a missing, malformed or unknown classification
// leaves the error unclassified instead of invalidating the frame, so both
// are kept as raw JSON: any JSON value is accepted and re-encoded as
// received (a status of 502.5, "502" or null, a code of 7, …), and only
// ClassifyEngineFailure interprets them. This is deliberately looser than
// the reference's declared *int status, whose own decoder had to swallow
// malformed values to meet the same rule. Producers should build the frame
// with NewEngineError.
//
// decision: the error text may be empty or blank. The frame's existence
// and its classification are what Core acts on; the text is prose that is
// never classified (daemon-protocol.txt:169-173), and refusing a frame
// with a blank text would lose its code and break the error-then-done
// order the protocol keeps.
type ErrorFrame struct {
	// Error is the error text, possibly empty; never classified.
	Error      string     `json:"error"`
	Code       NativeJSON `json:"code,omitempty"`
	HTTPStatus NativeJSON `json:"http_status,omitempty"`
}

// Validate checks an error frame. The classification members are never a
// reason to reject a frame from the wire; a locally built frame whose raw
// members are not JSON at all is rejected only because it could not be
// encoded.
func (p ErrorFrame) Validate() error {
	c := newChecker("")
	c.nativeJSON("code", p.Code, anyJSON)
	c.nativeJSON("http_status", p.HTTPStatus, anyJSON)
	return c.err()
}

// Done closes the execution stream of a Run with its final snapshot. It
// also closes a settled cancellation stream, but it never overrides the
// cancellation receipt and does not by itself mean success.
type Done struct {
	// Content is the final assistant text; it may be empty (a cancelled
	// Run), and an absent member decodes as empty.
	Content    string `json:"content"`
	Transcript string `json:"transcript,omitempty"`
	// Usage is the final cumulative snapshot; it replaces every earlier
	// usage frame. The zero Usage means no measurement and is omitted.
	Usage    Usage         `json:"usage,omitzero"`
	Metadata *DoneMetadata `json:"metadata,omitempty"`
	// SourceCompletedAtMS freezes when the native root execution completed
	// (Unix milliseconds), before child work settled; nil when unknown.
	SourceCompletedAtMS *int64 `json:"source_completed_at_ms,omitempty"`
}

// DoneMetadata is the native Session identity the Run ended with, which
// Core records to resume that Session later. The reference sent a free map
// with these two keys; agentwire closes it to them.
type DoneMetadata struct {
	AgentSessionID   string `json:"agent_session_id,omitempty"`
	AgentSessionType string `json:"agent_session_type,omitempty"`
}

// Validate checks a done frame with paths relative to the payload.
func (p Done) Validate() error {
	c := newChecker("")
	c.nested("usage", p.Usage.validate())
	if m := p.Metadata; m != nil {
		c.notBlankWhenSet("metadata.agent_session_id", m.AgentSessionID)
		if m.AgentSessionType != "" && m.AgentSessionID == "" {
			c.fail("metadata.agent_session_id", RuleRequired, "agent_session_type describes a session and needs its agent_session_id")
		}
		c.notBlankWhenSet("metadata.agent_session_type", m.AgentSessionType)
	}
	if p.SourceCompletedAtMS != nil && *p.SourceCompletedAtMS <= 0 {
		c.fail("source_completed_at_ms", RuleRange, "must be a positive Unix time in milliseconds")
	}
	return c.err()
}
