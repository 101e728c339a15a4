package execution

import (
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/bounded"
	"github.com/agentwire/agentwire/wire"
)

// Requests whose payload failed to decode or validate. A Core that sent
// one waits for the reply its family defines (and, for a read, would
// record the read unknown and fence the owner when none comes,
// daemon-protocol.txt:181), so every such request whose envelope names
// what it addresses is answered with its family's rejection and a finite
// code; only the IDs that pass the 128-byte bound are echoed. A frame
// that cannot be attributed (no type, an invalid id) stays a logged,
// counted refusal (peer.Driver.refuse).

// refuseMalformed answers r, a request whose payload did not decode, and
// reports whether its family defines a reply here.
func (s *Session) refuseMalformed(d *peer.Driver, r *peer.Refusal) bool {
	m := r.Msg
	if m.Entry == nil || wire.CheckID(m.Entry, m.ID) != nil {
		return false // nothing to answer on; the driver logged the frame
	}
	if m.Type == wire.TypePromptRequest {
		s.refuseMalformedPrompt(d, r)
		return true
	}
	ids := looseIDs(m.Envelope.Payload)
	no := false
	var out wire.Payload
	switch m.Type {
	case wire.TypeExecutionPrepare:
		out = wire.PreparationStatus{State: wire.PreparationRejected, Operation: wire.PreparationOpPrepare, ErrorCode: wire.PrepCodeInvalidRequest}
	case wire.TypeExecutionStart:
		out = wire.PreparationStatus{State: wire.PreparationRejected, Operation: wire.PreparationOpStart, ErrorCode: wire.PrepCodeInvalidStart,
			Handle: ids["handle"], RunID: ids["run_id"]}
	case wire.TypeExecutionRelease:
		out = wire.PreparationStatus{State: wire.PreparationRejected, Operation: wire.PreparationOpRelease, ErrorCode: wire.PrepCodeInvalidRelease,
			Handle: ids["handle"]}
	case wire.TypeWorkspaceRead:
		if s.reads.Dispatched(m.ID) {
			// The read already answered or will: one result per operation.
			s.cfg.Logger.Warn("malformed duplicate workspace_read refused without a second result", "operation", m.ID,
				"trace_id", r.Trace.TraceIDString())
			return true
		}
		out = wire.WorkspaceReadResult{Outcome: "rejected", ErrorCode: "invalid_request"}
	case wire.TypePromptSteer:
		out = wire.PromptSteerAck{InputID: ids["input_id"], Accepted: &no, ErrorCode: wire.SteerCodeInvalidInput}
	case wire.TypePromptCancel, wire.TypePermissionDecision, wire.TypePromptForUserChoiceDecision, wire.TypeFunctionResult:
		// decision: the interaction receipt's closed code list
		// (wire-reference.md, receipts) has no invalid_request; a
		// cancellation or an answer the Runtime cannot read is refused
		// invalid_result, the list's code for an answer Core sent that
		// cannot be taken. Nothing reaches the Harness.
		out = wire.InteractionDecisionAck{DeliveryID: ids["delivery_id"], Applied: &no, ErrorCode: wire.InteractionCodeInvalidResult}
	case wire.TypeEnvironmentQuiesce:
		out = wire.EnvironmentQuiesced{EnvironmentID: ids["environment_id"], SuspendID: ids["suspend_id"], Accepted: &no, ErrorCode: "invalid_request"}
	case wire.TypeEnvironmentResume:
		out = wire.EnvironmentResumed{EnvironmentID: ids["environment_id"], SuspendID: ids["suspend_id"], Accepted: &no, ErrorCode: "invalid_request"}
	default:
		return false
	}
	if v, ok := out.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			// The reply needs an ID the payload did not carry readably (a
			// receipt's delivery_id, say): the request cannot be answered.
			s.cfg.Logger.Warn("malformed request refused without a reply: its reply would need an ID it does not carry",
				"type", m.Type, "id", m.ID, "trace_id", r.Trace.TraceIDString(), "err", err)
			return true
		}
	}
	d.Send(peer.Outbound{ID: m.ID, Refusal: true, Payload: out}, func(err error) {
		if err != nil {
			s.cfg.Logger.Warn("malformed request: its rejection was not sent", "type", m.Type, "id", m.ID,
				"trace_id", r.Trace.TraceIDString(), "err", err)
		}
	})
	return true
}

// refuseMalformedPrompt answers a prompt_request whose payload did not
// decode. prompt_request has no rejection receipt (daemon-protocol.txt:120
// starts a Run with no handle to reject), so its family's definite answer
// is the failed Run's: error, then done to close the stream
// (daemon-protocol.txt:111), as run.go answers a valid one it cannot start. The error names the field that failed and carries the
// finite code invalid_request, so Core records a definite failure rather
// than waiting on a stream that never opens.
func (s *Session) refuseMalformedPrompt(d *peer.Driver, r *peer.Refusal) {
	m := r.Msg
	if s.runs[m.ID] != nil {
		// A Run with this ID is live on this connection: error and done
		// under its ID would end that Run's stream in Core's eyes. The
		// duplicate is only logged (a well-formed duplicate is refused
		// run_conflict by the run table and answered nothing either).
		s.cfg.Logger.Warn("malformed prompt_request for a live Run refused without a reply", "id", m.ID,
			"trace_id", r.Trace.TraceIDString(), "err", r.Err)
		return
	}
	// The field that failed, and why, in the wire's own words; an error
	// that names no field (none is expected) blames the payload.
	what := "payload: " + r.Err.Error()
	var fe *wire.FieldError
	if errors.As(r.Err, &fe) && fe.Field != "" {
		what = fe.Field + ": " + fe.Detail + " (" + string(fe.Rule) + ")"
	}
	// decision: the error frame's code member takes the engine
	// classification list (wire-reference.md, Engine failure), which has
	// invalid_request: the one finite code it offers for a request the
	// Runtime could not take. Classification never changes the terminal
	// status, so the Run fails either way.
	text := bounded.Text("invalid_request: malformed prompt_request, "+what, 512)
	for _, p := range []wire.Payload{wire.ErrorFrame{Error: text, Code: wire.NativeJSON(`"invalid_request"`)}, wire.Done{}} {
		d.Send(peer.Outbound{ID: m.ID, Refusal: true, Payload: p}, func(err error) {
			if err != nil {
				s.cfg.Logger.Warn("malformed prompt_request: its error and done were not sent", "id", m.ID,
					"trace_id", r.Trace.TraceIDString(), "err", err)
			}
		})
	}
}

// looseIDs reads the string members of a payload that failed strict
// decoding, keeping only those a reply may echo: valid UTF-8 of 1 to
// wire.MaxIDBytes bytes. A payload that is not a JSON object has none.
func looseIDs(raw json.RawMessage) map[string]string {
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil {
		return nil
	}
	out := make(map[string]string, len(members))
	for k, v := range members {
		var s string
		if json.Unmarshal(v, &s) == nil && s != "" && len(s) <= wire.MaxIDBytes && utf8.ValidString(s) {
			out[k] = s
		}
	}
	return out
}
