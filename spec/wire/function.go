package wire

import (
	"encoding/json"
	"strings"
)

// Function calls: the Harness calls a function the Agent declared, Core
// runs it and returns a function_result, and the Runtime confirms the result
// with an interaction_decision_ack under the Run ID. A replay of the same
// call_id with the same result is applied again; a different result is a
// decision_conflict.

// FunctionCall is the Harness calling a declared function. CallID is the
// native call identity and the interaction ID of the result.
//
// decision: Arguments must be a JSON object. Declared functions describe
// their parameters with an object schema, so anything else (a string, an
// array, a number, null) cannot be an argument set; an adapter whose model
// produced unparsable arguments fails the call natively instead of
// forwarding it.
type FunctionCall struct {
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Validate checks the call ID, the function name and the arguments object.
func (p FunctionCall) Validate() error {
	c := newChecker("")
	c.id("call_id", p.CallID, MaxIDBytes)
	c.required("name", p.Name)
	interactionObject(c, "arguments", p.Arguments, true)
	return c.err()
}

// FunctionResult is Core's result for one function call. Success is a
// pointer because a result that does not say whether the function
// succeeded must not read as a failure.
//
// Content is always present as an array, in order. An empty array is a
// valid result (a function that returns nothing); null or a missing member
// is not. Images need the function_result_images capability, which the
// admission rules check, not the payload.
type FunctionResult struct {
	DeliveryID string         `json:"delivery_id"`
	CallID     string         `json:"call_id"`
	Success    *bool          `json:"success"`
	Content    []InputContent `json:"content"`
}

// Validate checks both IDs, the presence of success and content, and every
// content item.
func (p FunctionResult) Validate() error {
	c := newChecker("")
	c.id("delivery_id", p.DeliveryID, MaxIDBytes)
	c.id("call_id", p.CallID, MaxIDBytes)
	interactionBool(c, "success", p.Success)
	if p.Content == nil {
		c.fail("content", RuleRequired, "content must be present as an array; send [] for no content")
	}
	for i, ct := range p.Content {
		interactionNested(c, "content["+itoa(i)+"]", functionContent(ct))
	}
	return c.err()
}

// HasImage reports whether the result carries an image, which only a Run
// whose declaration supports function_result_images may receive.
func (p FunctionResult) HasImage() bool {
	for _, ct := range p.Content {
		if ct.Type == ContentImage {
			return true
		}
	}
	return false
}

// functionContent checks one function-result content item, with paths
// relative to the item. Unlike a user message, a function's text output may
// be empty: an input_text item needs no non-blank text (and since
// InputContent cannot tell an empty text from a missing one, both are
// accepted). An input_image needs a non-blank image_url.
func functionContent(ct InputContent) *FieldError {
	c := newChecker("")
	switch ct.Type {
	case ContentText:
		c.forbidden("image_url", ct.ImageURL != "", "input_text carries no image_url")
	case ContentImage:
		c.forbidden("text", ct.Text != "", "input_image carries no text")
		if strings.TrimSpace(ct.ImageURL) == "" {
			c.fail("image_url", RuleRequired, "input_image needs an image_url")
		}
	default:
		c.oneOf("type", ct.Type, ContentText, ContentImage)
	}
	return c.first
}
