package sdkcheck_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentwire/agentwire/runtime/harness/modeltest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func openAIClient(srv *modeltest.Server) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(srv.OpenAIBaseURL()+"/"),
		option.WithAPIKey("dummy"),
		option.WithHTTPClient(srv.Client()),
		option.WithMaxRetries(0),
	)
}

func anthropicClient(srv *modeltest.Server) anthropic.Client {
	return anthropic.NewClient(
		aoption.WithBaseURL(srv.URL()+"/"),
		aoption.WithAPIKey("sk-ant-dummy"),
		aoption.WithHTTPClient(srv.Client()),
		aoption.WithMaxRetries(0),
	)
}

func responseParams(prompt string) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model: "gpt-5.5",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
	}
}

func TestOpenAISDKReadsTheResponsesStream(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(modeltest.Reply(
		modeltest.Reasoning("Think ", "briefly."),
		modeltest.Text("Hello ", "there."),
		modeltest.CodexExecEscalated("echo hi", "say hi"),
		modeltest.CodexApplyPatch(modeltest.AddFilePatch("a.txt", "a\n")),
	).WithUsage(modeltest.Usage{InputTokens: 11, CachedTokens: 3, OutputTokens: 5, ReasoningTokens: 2})))

	client := openAIClient(srv)
	st := client.Responses.NewStreaming(t.Context(), responseParams("Say hello"))
	defer func() { _ = st.Close() }()

	var (
		text, reasoning, args, input strings.Builder
		seq                          int64
		types                        []string
		done                         []responses.ResponseOutputItemUnion
		completed                    *responses.Response
	)
	for st.Next() {
		ev := st.Current()
		require.NotNil(t, ev.AsAny(), "the SDK knows event %s", ev.Type)
		assert.Equal(t, seq, ev.SequenceNumber, ev.Type)
		seq++
		types = append(types, ev.Type)
		switch e := ev.AsAny().(type) {
		case responses.ResponseTextDeltaEvent:
			assert.True(t, e.JSON.ItemID.Valid() && e.JSON.OutputIndex.Valid() && e.JSON.ContentIndex.Valid() && e.JSON.Logprobs.Valid())
			text.WriteString(e.Delta)
		case responses.ResponseReasoningSummaryTextDeltaEvent:
			assert.True(t, e.JSON.ItemID.Valid() && e.JSON.SummaryIndex.Valid())
			reasoning.WriteString(e.Delta)
		case responses.ResponseFunctionCallArgumentsDeltaEvent:
			args.WriteString(e.Delta)
		case responses.ResponseCustomToolCallInputDeltaEvent:
			input.WriteString(e.Delta)
		case responses.ResponseOutputItemDoneEvent:
			done = append(done, e.Item)
		case responses.ResponseCompletedEvent:
			completed = &e.Response
		}
	}
	require.NoError(t, st.Err())
	assert.Equal(t, "response.created", types[0])
	assert.Equal(t, "Hello there.", text.String())
	assert.Equal(t, "Think briefly.", reasoning.String())

	require.Len(t, done, 4)
	rs := done[0].AsReasoning()
	require.Len(t, rs.Summary, 1)
	assert.Equal(t, "Think briefly.", rs.Summary[0].Text)
	msg := done[1].AsMessage()
	require.Len(t, msg.Content, 1)
	assert.Equal(t, "Hello there.", msg.Content[0].AsOutputText().Text)
	fc := done[2].AsFunctionCall()
	assert.Equal(t, "exec_command", fc.Name)
	assert.Equal(t, args.String(), fc.Arguments)
	assert.NotEmpty(t, fc.CallID)
	var decoded map[string]any
	require.NoError(t, json.Unmarshal([]byte(fc.Arguments), &decoded))
	assert.Equal(t, "require_escalated", decoded["sandbox_permissions"])
	ct := done[3].AsCustomToolCall()
	assert.Equal(t, "apply_patch", ct.Name)
	assert.Equal(t, input.String(), ct.Input)

	require.NotNil(t, completed)
	assert.Equal(t, responses.ResponseStatusCompleted, completed.Status)
	assert.Len(t, completed.Output, 4)
	assert.Equal(t, int64(11), completed.Usage.InputTokens)
	assert.Equal(t, int64(3), completed.Usage.InputTokensDetails.CachedTokens)
	assert.Equal(t, int64(5), completed.Usage.OutputTokens)
	assert.Equal(t, int64(2), completed.Usage.OutputTokensDetails.ReasoningTokens)
	assert.Equal(t, int64(16), completed.Usage.TotalTokens)
	assert.Equal(t, "Hello there.", completed.OutputText())

	r, err := srv.Await(t.Context(), 1)
	require.NoError(t, err)
	assert.Equal(t, "Say hello", r.LastUserText())
	assert.Equal(t, "Bearer [redacted]", r.Header.Get("Authorization"))
}

func TestOpenAISDKReadsTheErrors(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(
		modeltest.Fail(http.StatusTooManyRequests, "slow down"),
		modeltest.ContextLengthExceeded(),
	))
	client := openAIClient(srv)
	_, err := client.Responses.New(t.Context(), responseParams("x"))
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
	assert.Equal(t, "rate_limit_exceeded", apiErr.Code)
	assert.Equal(t, "slow down", apiErr.Message)

	st := client.Responses.NewStreaming(t.Context(), responseParams("y"))
	for st.Next() {
	}
	require.True(t, errors.As(st.Err(), &apiErr), "%v", st.Err())
	assert.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	assert.Equal(t, "context_length_exceeded", apiErr.Code)
	require.NoError(t, st.Close())
}

func TestAnthropicSDKAccumulatesTheMessagesStream(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(modeltest.Reply(
		modeltest.Reasoning("Think ", "briefly."),
		modeltest.Text("Hello ", "there."),
		modeltest.ClaudeBash("echo hi", "Say hi"),
	).WithUsage(modeltest.Usage{InputTokens: 11, CachedTokens: 3, CacheWriteTokens: 1, OutputTokens: 5})))

	client := anthropicClient(srv)
	st := client.Messages.NewStreaming(t.Context(), anthropic.MessageNewParams{
		Model:     "scripted-model",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say hello"))},
	})
	defer func() { _ = st.Close() }()
	var msg anthropic.Message
	var types []string
	for st.Next() {
		ev := st.Current()
		require.NotNil(t, ev.AsAny(), "the SDK knows event %s", ev.Type)
		types = append(types, ev.Type)
		require.NoError(t, msg.Accumulate(ev))
	}
	require.NoError(t, st.Err())
	assert.Equal(t, "message_start", types[0])
	assert.Equal(t, "message_stop", types[len(types)-1])

	require.Len(t, msg.Content, 3)
	thinking := msg.Content[0].AsThinking()
	assert.Equal(t, "Think briefly.", thinking.Thinking)
	assert.NotEmpty(t, thinking.Signature)
	assert.Equal(t, "Hello there.", msg.Content[1].AsText().Text)
	tool := msg.Content[2].AsToolUse()
	assert.Equal(t, "Bash", tool.Name)
	assert.NotEmpty(t, tool.ID)
	assert.JSONEq(t, `{"command":"echo hi","description":"Say hi"}`, string(tool.Input))
	assert.Equal(t, anthropic.StopReasonToolUse, msg.StopReason)
	assert.Equal(t, int64(11), msg.Usage.InputTokens)
	assert.Equal(t, int64(3), msg.Usage.CacheReadInputTokens)
	assert.Equal(t, int64(1), msg.Usage.CacheCreationInputTokens)
	assert.Equal(t, int64(5), msg.Usage.OutputTokens)

	r, err := srv.Await(t.Context(), 1)
	require.NoError(t, err)
	assert.Equal(t, "Say hello", r.LastUserText())
	// This SDK sends its key as a bearer token (Claude Code sends x-api-key).
	assert.Equal(t, "Bearer [redacted]", r.Header.Get("Authorization"), "%v", r.Header)
	for name, vals := range r.Header {
		assert.NotContains(t, strings.Join(vals, " "), "sk-ant-dummy", name)
	}
}

func TestAnthropicSDKReadsTheErrorsAndCountsTokens(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(modeltest.Fail(529, "")))
	client := anthropicClient(srv)
	params := anthropic.MessageNewParams{
		Model:     "scripted-model",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))},
	}
	_, err := client.Messages.New(t.Context(), params)
	var apiErr *anthropic.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, 529, apiErr.StatusCode)
	assert.Contains(t, apiErr.Error(), "overloaded_error")

	count, err := client.Messages.CountTokens(t.Context(), anthropic.MessageCountTokensParams{
		Model:    "scripted-model",
		Messages: params.Messages,
	})
	require.NoError(t, err)
	assert.Positive(t, count.InputTokens)
}
