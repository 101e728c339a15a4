package codex

import "encoding/json"

// The app-server messages the adapter uses, as Codex 0.171.0's generated
// JSON schema describes them (`codex app-server generate-json-schema`).
// Only the members the adapter reads or writes are declared; unknown
// members are ignored, as the protocol adds fields often.

// Methods and notifications.
const (
	mInitialize      = "initialize"
	mInitialized     = "initialized"
	mThreadStart     = "thread/start"
	mThreadResume    = "thread/resume"
	mTurnStart       = "turn/start"
	mTurnSteer       = "turn/steer"
	mTurnInterrupt   = "turn/interrupt"
	nAgentDelta      = "item/agentMessage/delta"
	nReasoningSumm   = "item/reasoning/summaryTextDelta"
	nReasoningText   = "item/reasoning/textDelta"
	nItemStarted     = "item/started"
	nItemCompleted   = "item/completed"
	nTokenUsage      = "thread/tokenUsage/updated"
	nTurnCompleted   = "turn/completed"
	nError           = "error"
	nRequestResolved = "serverRequest/resolved"
	rCommandApproval = "item/commandExecution/requestApproval"
	rFileApproval    = "item/fileChange/requestApproval"
	rToolCall        = "item/tool/call"
)

// Thread item types.
const (
	itemUserMessage  = "userMessage"
	itemAgentMessage = "agentMessage"
	itemCommand      = "commandExecution"
	itemFileChange   = "fileChange"
	itemMCPTool      = "mcpToolCall"
	itemDynamicTool  = "dynamicToolCall"
	itemWebSearch    = "webSearch"
)

// Turn statuses of turn/completed.
const (
	turnCompleted   = "completed"
	turnInterrupted = "interrupted"
	turnFailed      = "failed"
)

type clientInfo struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

type initializeParams struct {
	ClientInfo   clientInfo `json:"clientInfo"`
	Capabilities struct {
		ExperimentalAPI bool `json:"experimentalApi"`
	} `json:"capabilities"`
}

// threadParams serves thread/start and thread/resume (ThreadID and
// ExcludeTurns only for resume).
type threadParams struct {
	ThreadID              string         `json:"threadId,omitempty"`
	Cwd                   string         `json:"cwd"`
	ApprovalPolicy        string         `json:"approvalPolicy"`
	Sandbox               string         `json:"sandbox"`
	Model                 string         `json:"model,omitempty"`
	Config                map[string]any `json:"config,omitempty"`
	DeveloperInstructions *string        `json:"developerInstructions,omitempty"`
	ExcludeTurns          bool           `json:"excludeTurns,omitempty"`
	// DynamicTools (experimental; thread/start only) are the Agent's
	// function tools, answered by the client through item/tool/call.
	DynamicTools []dynamicTool `json:"dynamicTools,omitempty"`
}

type dynamicTool struct {
	Type        string          `json:"type"` // "function"
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// toolCallParams is the item/tool/call server request.
type toolCallParams struct {
	scope
	CallID    string          `json:"callId"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// toolCallResponse answers item/tool/call.
type toolCallResponse struct {
	ContentItems []toolContent `json:"contentItems"`
	Success      bool          `json:"success"`
}

type toolContent struct {
	Type string `json:"type"` // "inputText"
	Text string `json:"text"`
}

type threadResult struct {
	Thread struct {
		ID string `json:"id"`
	} `json:"thread"`
	Model string `json:"model"`
	// Sandbox is the thread's effective sandbox policy.
	Sandbox sandboxPolicy `json:"sandbox"`
}

// sandboxPolicy is the SandboxPolicy thread/start and thread/resume
// answer (the members of its workspaceWrite variant).
type sandboxPolicy struct {
	Type                string   `json:"type"`
	WritableRoots       []string `json:"writableRoots,omitempty"`
	NetworkAccess       any      `json:"networkAccess"` // a bool here, a string in other variants
	ExcludeTmpdirEnvVar bool     `json:"excludeTmpdirEnvVar"`
	ExcludeSlashTmp     bool     `json:"excludeSlashTmp"`
}

// userInput is a TextUserInput; images are refused before this point.
type userInput struct {
	Type         string `json:"type"`
	Text         string `json:"text"`
	TextElements []any  `json:"text_elements"`
}

type turnStartParams struct {
	ThreadID     string          `json:"threadId"`
	Input        []userInput     `json:"input"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
}

type turnSteerParams struct {
	ThreadID            string      `json:"threadId"`
	ExpectedTurnID      string      `json:"expectedTurnId"`
	ClientUserMessageID string      `json:"clientUserMessageId"`
	Input               []userInput `json:"input"`
}

type turnInterruptParams struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
}

type turnInfo struct {
	ID     string     `json:"id"`
	Status string     `json:"status"`
	Error  *turnError `json:"error"`
}

type turnResult struct {
	Turn turnInfo `json:"turn"`
}

type turnError struct {
	Message        string          `json:"message"`
	CodexErrorInfo json.RawMessage `json:"codexErrorInfo"`
}

// scope is what every turn notification carries.
type scope struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
}

type deltaParams struct {
	scope
	ItemID string `json:"itemId"`
	Delta  string `json:"delta"`
}

type itemParams struct {
	scope
	Item json.RawMessage `json:"item"`
}

type tokenUsageParams struct {
	scope
	TokenUsage threadUsage `json:"tokenUsage"`
}

type errorParams struct {
	scope
	Error     turnError `json:"error"`
	WillRetry bool      `json:"willRetry"`
}

type turnCompletedParams struct {
	ThreadID string   `json:"threadId"`
	Turn     turnInfo `json:"turn"`
}

type resolvedParams struct {
	ThreadID  string          `json:"threadId"`
	RequestID json.RawMessage `json:"requestId"`
}

// approvalParams serves both approval requests.
type approvalParams struct {
	scope
	ItemID    string  `json:"itemId"`
	Reason    *string `json:"reason"`
	Command   *string `json:"command"`
	Cwd       *string `json:"cwd"`
	GrantRoot *string `json:"grantRoot"`
}

// item is a ThreadItem with the members of every type the adapter maps.
type item struct {
	Type     string  `json:"type"`
	ID       string  `json:"id"`
	ClientID *string `json:"clientId"`
	// agentMessage
	Text  string  `json:"text"`
	Phase *string `json:"phase"`
	// commandExecution
	Command          string  `json:"command"`
	Cwd              *string `json:"cwd"`
	Status           string  `json:"status"`
	ExitCode         *int64  `json:"exitCode"`
	AggregatedOutput *string `json:"aggregatedOutput"`
	DurationMS       *int64  `json:"durationMs"`
	// fileChange
	Changes []fileChange `json:"changes"`
	// mcpToolCall and dynamicToolCall
	Server       string          `json:"server"`
	Tool         string          `json:"tool"`
	Arguments    json.RawMessage `json:"arguments"`
	Result       json.RawMessage `json:"result"`
	Error        json.RawMessage `json:"error"`
	ContentItems json.RawMessage `json:"contentItems"`
	Success      *bool           `json:"success"`
	// webSearch
	Query string `json:"query"`
}

type fileChange struct {
	Path string `json:"path"`
	Kind struct {
		Type string `json:"type"`
	} `json:"kind"`
	Diff string `json:"diff"`
}
