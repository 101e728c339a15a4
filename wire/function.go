package wire

import (
	"slices"
	"strconv"
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
	CallID    string     `json:"call_id"`
	Name      string     `json:"name"`
	Arguments NativeJSON `json:"arguments"`
}

// Validate checks the call ID, the function name and the arguments object.
func (p FunctionCall) Validate() error {
	c := newChecker("")
	c.id("call_id", p.CallID, MaxIDBytes)
	c.required("name", p.Name)
	c.nativeJSON("arguments", p.Arguments, requiredObject)
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
// content item. A function may return empty text, so items follow the
// textMayBeEmpty rule.
func (p FunctionResult) Validate() error {
	c := newChecker("")
	c.id("delivery_id", p.DeliveryID, MaxIDBytes)
	c.id("call_id", p.CallID, MaxIDBytes)
	c.requiredBool("success", p.Success)
	if p.Content == nil {
		c.fail("content", RuleRequired, "content must be present as an array; send [] for no content")
	}
	for i, ct := range p.Content {
		c.nested("content["+strconv.Itoa(i)+"]", ct.validate(textMayBeEmpty))
	}
	return c.err()
}

// HasImage reports whether the result carries an image, which only a Run
// whose declaration supports function_result_images may receive.
func (p FunctionResult) HasImage() bool {
	return slices.ContainsFunc(p.Content, InputContent.isImage)
}
