package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/wire"
)

// AnswerRequest answers one interaction of a Turn. A permission request
// takes approved (and an optional message); a user-choice question takes
// question_answers, or cancelled with an optional reason; a function call
// takes success and content (the function's output, [] for none).
type AnswerRequest struct {
	Approved        *bool                   `json:"approved,omitempty"`
	Message         string                  `json:"message,omitempty"`
	QuestionAnswers []wire.UserChoiceAnswer `json:"question_answers,omitempty"`
	Cancelled       bool                    `json:"cancelled,omitempty"`
	Reason          string                  `json:"reason,omitempty"`
	Success         *bool                   `json:"success,omitempty"`
	Content         []wire.InputContent     `json:"content,omitempty"`
}

// FunctionResultRequest answers a function call of a Turn by its call_id
// (POST /api/v1/turns/{turn_id}/function-results).
type FunctionResultRequest struct {
	CallID  string              `json:"call_id"`
	Success *bool               `json:"success"`
	Content []wire.InputContent `json:"content"`
}

// Errors the Answer function returns.
var (
	ErrAnswered = errors.New("api: the interaction is no longer pending")
)

// answerPayload builds the wire answer for the interaction it, or names
// the field at fault.
func answerPayload(it store.Interaction, req AnswerRequest) (wire.Payload, string, string) {
	if it.Kind != "function" && (req.Success != nil || req.Content != nil) {
		return nil, "success", "success and content answer a function call"
	}
	switch it.Kind {
	case "function":
		switch {
		case req.Approved != nil || req.Message != "" || req.QuestionAnswers != nil || req.Cancelled || req.Reason != "":
			return nil, "approved", "a function result takes success and content only"
		case req.Success == nil:
			return nil, "success", "a function result needs success"
		case req.Content == nil:
			return nil, "content", "a function result needs content; send [] for none"
		}
		return wire.FunctionResult{DeliveryID: "api", CallID: it.CallID, Success: req.Success, Content: req.Content}, "", ""
	case "permission":
		if req.Approved == nil {
			return nil, "approved", "a permission answer needs approved"
		}
		if req.QuestionAnswers != nil || req.Cancelled || req.Reason != "" {
			return nil, "question_answers", "a permission answer takes approved and message only"
		}
		return wire.PermissionDecision{DeliveryID: "api", Approved: req.Approved, Message: req.Message}, "", ""
	case "user_choice":
		if req.Approved != nil || req.Message != "" {
			return nil, "approved", "a user-choice answer takes question_answers or cancelled"
		}
		if req.Cancelled == (req.QuestionAnswers != nil) {
			return nil, "question_answers", "give question_answers or cancelled, not both"
		}
		return wire.PromptForUserChoiceDecision{DeliveryID: "api", QuestionAnswers: req.QuestionAnswers, Cancelled: req.Cancelled, Reason: req.Reason}, "", ""
	}
	return nil, "interaction_id", "this interaction is not answered through the API"
}

// answer sends a decision for a pending interaction. The answer is 202:
// the receipt that echoes the delivery ID settles it, which the event
// stream reports (interaction_outcome).
func (a *API) answer(w http.ResponseWriter, r *http.Request) {
	t, ok := a.turn(w, r)
	if !ok {
		return
	}
	it, err := a.cfg.Store.GetInteraction(r.Context(), r.PathValue("interaction_id"))
	if errors.Is(err, store.ErrNotFound) || (err == nil && it.TurnID != t.ID) {
		notFound(w, "interaction")
		return
	}
	if err != nil {
		a.internal(w, "get interaction", err)
		return
	}
	var req AnswerRequest
	if !decode(w, r, &req) {
		return
	}
	a.send(w, r, t, it, req)
}

// functionResult answers the Turn's function call named by call_id, as
// answer does by interaction ID.
func (a *API) functionResult(w http.ResponseWriter, r *http.Request) {
	t, ok := a.turn(w, r)
	if !ok {
		return
	}
	var req FunctionResultRequest
	if !decode(w, r, &req) {
		return
	}
	if req.CallID == "" {
		badField(w, "call_id", "call_id names the function call to answer")
		return
	}
	it, err := a.cfg.Store.FunctionCall(r.Context(), t.ID, req.CallID)
	if errors.Is(err, store.ErrNotFound) {
		notFound(w, "function call")
		return
	}
	if err != nil {
		a.internal(w, "get function call", err)
		return
	}
	a.send(w, r, t, it, AnswerRequest{Success: req.Success, Content: req.Content})
}

// send checks the answer against the interaction it answers and hands it
// to the gateway.
func (a *API) send(w http.ResponseWriter, r *http.Request, t store.Turn, it store.Interaction, req AnswerRequest) {
	p, field, detail := answerPayload(it, req)
	if p == nil {
		badField(w, field, detail)
		return
	}
	if field, detail := askedQuestions(it, req); field != "" {
		badField(w, field, detail)
		return
	}
	if err := p.Validate(); err != nil {
		var fe *wire.FieldError
		if errors.As(err, &fe) {
			badField(w, fe.Field, fe.Detail)
		} else {
			badField(w, "", boundedText(err.Error()))
		}
		return
	}
	if a.cfg.Answer == nil {
		writeJSON(w, http.StatusConflict, Error{Error: "not_running", Detail: "this Core runs no Turns"})
		return
	}
	delivery, err := a.cfg.Answer(r.Context(), t.ID, it.ID, p)
	var unsupported *AnswerUnsupported
	switch {
	case errors.Is(err, ErrAnswered):
		writeJSON(w, http.StatusConflict, Error{Error: "interaction_settled", Detail: "the interaction was answered or withdrawn"})
	case errors.Is(err, ErrNotRunning):
		writeJSON(w, http.StatusConflict, Error{Error: "not_running", Detail: "the Turn's Run is not on a live connection"})
	case errors.As(err, &unsupported):
		writeJSON(w, http.StatusConflict, Error{Error: "result_unsupported", Detail: boundedText(unsupported.Detail)})
	case err != nil:
		a.internal(w, "answer interaction", err)
	default:
		writeJSON(w, http.StatusAccepted, map[string]string{"interaction_id": it.ID, "delivery_id": delivery})
	}
}

// AnswerUnsupported is an answer the Turn's Harness cannot take (an image
// in a function result without function_result_images): 409, nothing sent,
// the interaction still open.
type AnswerUnsupported struct{ Detail string }

func (e *AnswerUnsupported) Error() string { return "api: answer unsupported: " + e.Detail }

// AnswerFunc sends an answer; see Config.Answer.
type AnswerFunc func(ctx context.Context, turnID, interactionID string, answer wire.Payload) (string, error)

// askedQuestions checks a user-choice answer against the questions the
// Run emitted: each question_id must be one of them, once
// (daemon-protocol.txt:82). It names the failing field, or returns "".
func askedQuestions(it store.Interaction, req AnswerRequest) (string, string) {
	if it.Kind != "user_choice" || len(req.QuestionAnswers) == 0 {
		return "", ""
	}
	var asked wire.PromptForUserChoice
	if err := json.Unmarshal(it.Request, &asked); err != nil {
		return "interaction_id", "the stored question cannot be read"
	}
	ids := map[string]bool{}
	for _, q := range asked.Questions {
		ids[q.ID] = true
	}
	seen := map[string]bool{}
	for i, a := range req.QuestionAnswers {
		field := fmt.Sprintf("question_answers[%d].question_id", i)
		switch {
		case !ids[a.QuestionID]:
			return field, "not a question of this interaction"
		case seen[a.QuestionID]:
			return field, "answered twice"
		}
		seen[a.QuestionID] = true
	}
	return "", ""
}
