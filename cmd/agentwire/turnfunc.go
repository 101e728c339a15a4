package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/agentwire/agentwire/wire"
)

// maxFunctionOutput bounds what a --functions command may return as one
// result's text.
const maxFunctionOutput = 1 << 20

// functionCall is the journal event Core writes for a function call.
type functionCall struct {
	InteractionID string            `json:"interaction_id"`
	Request       wire.FunctionCall `json:"request"`
}

// functionResult runs the --functions command for a function_call event
// and returns the interaction to answer and the API body: the call's JSON
// ({"call_id","name","arguments"}) goes to the command's standard input,
// with AGENTWIRE_FUNCTION and AGENTWIRE_CALL_ID set; its standard output
// is the result's text, success when it exits 0.
//
// decision: a command that fails, or writes more than 1 MiB, answers the
// call with success false and what it wrote (or why it failed): the model
// hears the tool failed instead of the Turn waiting for a result that will
// not come (daemon-protocol.txt:80 lets Core answer a call once).
func functionResult(command, data string) (string, map[string]any, error) {
	var call functionCall
	if err := json.Unmarshal([]byte(data), &call); err != nil || call.InteractionID == "" {
		return "", nil, fmt.Errorf("the function_call event has no interaction_id")
	}
	req, _ := json.Marshal(call.Request)
	cmd := exec.Command("sh", "-c", command)
	cmd.Stdin = bytes.NewReader(req)
	cmd.Env = append(os.Environ(), "AGENTWIRE_FUNCTION="+call.Request.Name, "AGENTWIRE_CALL_ID="+call.Request.CallID)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	text, success := out.String(), err == nil
	switch {
	case out.Len() > maxFunctionOutput:
		text, success = fmt.Sprintf("the function's output is over %d bytes", maxFunctionOutput), false
	case err != nil && strings.TrimSpace(text) == "":
		text = strings.TrimSpace(errOut.String())
		if text == "" {
			text = err.Error()
		}
	}
	content := []map[string]any{{"type": "input_text", "text": text}}
	return call.InteractionID, map[string]any{"success": success, "content": content}, nil
}
