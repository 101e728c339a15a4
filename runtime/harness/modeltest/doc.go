// Package modeltest is a scripted model endpoint for tests that run real
// coding-agent CLIs offline: an HTTP server on 127.0.0.1 (an ephemeral
// port) that answers as the OpenAI Responses API (POST /v1/responses, for
// Codex) and the Anthropic Messages API (POST /v1/messages and
// /v1/messages/count_tokens, for Claude Code) and the Gemini API (POST
// /v1beta/models/{model}:streamGenerateContent?alt=sse and
// :generateContent, for Gemini CLI), with GET /v1/models for the first
// two. Streams are server-sent events shaped as the providers send them.
//
// It is a normal package so that adapters and other modules' tests can
// import it; nothing outside tests should.
//
// # Pointing a CLI at it
//
//	srv := modeltest.New(t)
//	// Codex: a provider with base_url srv.OpenAIBaseURL() and
//	// wire_api "responses"; any API key.
//	// Claude Code: ANTHROPIC_BASE_URL=srv.URL(), any ANTHROPIC_API_KEY.
//	// Gemini CLI: GOOGLE_GEMINI_BASE_URL=srv.URL(), any GEMINI_API_KEY.
//
// The server is closed by t.Cleanup; closing ends any stream still held.
// Start runs one outside a test (an example, a manual run), closed by its
// caller.
//
// # Scripting
//
// Each request for a turn (Responses, Messages or Gemini API; a Gemini
// CLI's side calls to :generateContent are turns too) takes the next
// entry of the script: a Turn (Enqueue, WithTurns) or a Responder that
// computes one from the recorded Request (EnqueueFunc, WithResponders).
// When the script is empty, DefaultTurn answers (or WithFallback's
// responder; WithStrictScript makes it a test failure): the text
// "Tool said: …" after a tool result, otherwise a short reasoning and
// "Hello from the scripted model.".
//
// A turn is a sequence of parts:
//
//   - Text and Reasoning stream deltas, one per argument;
//   - FunctionCall calls a function tool (a function_call item, or a
//     tool_use block) with caller-chosen name and arguments, and
//     CustomToolCall a freeform custom tool (Responses API only); the
//     helpers CodexExec, CodexExecEscalated, CodexApplyPatch,
//     CodexRequestUserInput, ClaudeBash, ClaudeWrite and
//     ClaudeAskUserQuestion call the CLIs' own tools;
//   - Hold pauses the stream until the test opens a Gate (Gate.Reached
//     says the stream got there), so a test controls a slow stream with
//     no clock; Sleep and SlowText pause for real time, for end-to-end
//     runs;
//   - Drop closes the connection mid-stream, StreamError ends the stream
//     with the provider's error event.
//
// Fail, FailWith and ContextLengthExceeded answer with an HTTP error and
// the provider's error body instead of a stream; Turn.WithUsage sets the
// usage the stream reports (DefaultUsage otherwise). OnToolResult and
// EchoToolResult answer a tool result with a turn derived from it.
//
// # Inspection
//
// Every request is recorded before it is answered (Requests,
// TurnRequests): method, path, headers with the credentials redacted, and
// the decoded JSON body, with helpers for the last user text, the tools
// offered and the tool results sent back. Await waits for the n-th turn
// request, with a context and no sleep.
//
// EventReader and ReadEvents parse a server-sent event stream, for tests
// that call the endpoint themselves.
package modeltest
