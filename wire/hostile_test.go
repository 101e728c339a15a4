package wire

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The hostile-frame table: crafted frames, each with the result Decode must
// give (accepted, or refused naming its field and rule) and, for every
// refusal, an error text of at most MaxErrorBytes. The payload bad cases of
// testdata/bad are added to it, wrapped in frames. Every frame of the table
// small enough to mutate is also a seed of FuzzDecodeFrame.

const (
	hostileRun  = "run-1"
	hostileUUID = "0f8fad5b-d9cb-469f-a165-70867728950e"
	hostileEnv  = "8d0f3a2b-1c4e-4f5a-8b6c-7d8e9f0a1b2c"
	hostileSess = "3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b"
	emptySHA    = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	goodTrace   = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
)

// anyField accepts whatever field an error names (a path whose exact
// spelling is not the point of the case).
const anyField = "*"

type hostileCase struct {
	name  string
	frame []byte
	dir   Direction
	// field and rule of the expected refusal; both empty when the frame
	// must be accepted.
	field string
	rule  Rule
	// route is set when a *RouteError is expected instead.
	route error
	// check inspects an accepted frame.
	check func(t *testing.T, m Message)
}

// env builds a frame by concatenation, so that a case can hold what
// encoding/json would never write: repeated members, raw bytes, escapes.
func env(typ, id, payload string) []byte {
	b := `{"type":"` + typ + `"`
	if id != "" {
		b += `,"id":"` + id + `"`
	}
	if payload != "" {
		b += `,"payload":` + payload
	}
	return []byte(b + "}")
}

func nested(open, leaf, close string, n int) string {
	return strings.Repeat(open, n) + leaf + strings.Repeat(close, n)
}

// wideObject is an object of n distinct members, the last named last.
func wideObject(n int, last string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < n; i++ {
		b.WriteString(`"k` + strconv.Itoa(i) + `":0,`)
	}
	b.WriteString(`"` + last + `":0}`)
	return b.String()
}

func hostileCases(t testing.TB) []hostileCase {
	var hb string // the largest heartbeat example: it declares kinds
	for _, ex := range examplesOf(t, TypeHeartbeat) {
		if len(ex) > len(hb) {
			hb = string(ex)
		}
	}
	hbWith := func(members string) string { return `{` + members + `,` + hb[1:] }
	capsOf := func() string {
		var v struct {
			Kinds []struct {
				Caps json.RawMessage `json:"capabilities"`
			} `json:"supported_agent_kinds"`
		}
		require.NoError(t, json.Unmarshal([]byte(hb), &v))
		return string(v.Kinds[0].Caps)
	}
	caps := capsOf()
	kind := func(name, capabilities string) string {
		return `{"kind":"` + name + `","available":true,"capabilities":` + capabilities + `}`
	}
	wwBegin := func(path string) string {
		return `{"step":"begin","environment_id":"` + hostileEnv + `","session_id":"` + hostileSess + `","path":` + path + `,"sha256":"` + emptySHA + `"}`
	}
	delta := func(text string) []byte { return env(TypeDelta, hostileRun, `{"delta":`+text+`,"sequence":1}`) }
	tool := func(args string) []byte {
		return env(TypeToolCall, hostileRun, `{"id":"c1","name":"Bash","stage":"before","args":`+args+`}`)
	}
	R, C := RuntimeToCore, CoreToRuntime
	deep4M := strings.Repeat("[", 4<<20-64)
	cases := []hostileCase{
		// 1. Nesting: bounded at MaxJSONDepth, refused before any parse.
		{name: "4M [ in a payload member", frame: []byte(`{"type":"delta","id":"r1","payload":{"a":` + deep4M), dir: R, field: "payload", rule: RuleTooLarge},
		{name: "4M [ in the id", frame: []byte(`{"type":"delta","id":` + deep4M), dir: R, field: "id", rule: RuleTooLarge},
		{name: "4M [ in an unknown envelope member", frame: []byte(`{"type":"delta","zz":` + deep4M), dir: R, field: "zz", rule: RuleTooLarge},
		{name: "4M [ in the trace", frame: []byte(`{"type":"delta","trace":` + deep4M), dir: R, field: "trace", rule: RuleTooLarge},
		{name: "4M [ as the frame", frame: []byte(deep4M), dir: R, field: anyField, rule: RuleTooLarge},
		{name: "4M {\"a\": in a payload", frame: []byte(`{"type":"delta","id":"r1","payload":` + strings.Repeat(`{"a":`, 800000)), dir: R, field: "payload", rule: RuleTooLarge},
		{name: "args nested to the limit", frame: tool(nested(`{"a":`, "1", "}", MaxJSONDepth-1)), dir: R},
		{name: "args nested one past the limit", frame: tool(nested(`{"a":`, "1", "}", MaxJSONDepth)), dir: R, field: anyField, rule: RuleTooLarge},
		{name: "arrays nested one past the limit", frame: tool(`{"a":` + nested("[", "1", "]", MaxJSONDepth-1) + `}`), dir: R, field: anyField, rule: RuleTooLarge},
		{name: "unknown heartbeat member nested to the limit", frame: env(TypeHeartbeat, "", hbWith(`"x":`+nested("[", "", "]", MaxJSONDepth-1))), dir: R},
		{name: "unknown heartbeat member nested past the limit", frame: env(TypeHeartbeat, "", hbWith(`"x":`+nested("[", "", "]", MaxJSONDepth))), dir: R, field: "payload", rule: RuleTooLarge},
		{name: "deep nesting in a result", frame: env(TypeToolCall, hostileRun, `{"id":"c1","name":"n","stage":"after","result":{"r":`+nested("[", "", "]", 200)+`}}`), dir: R, field: "payload", rule: RuleTooLarge},

		// 2. Repeated members, at every depth, whatever the spelling.
		{name: "approved false then true", frame: env(TypePermissionDecision, "perm_1", `{"delivery_id":"d1","approved":false,"approved":true}`), dir: C, field: "payload.approved", rule: RuleConflict},
		{name: "write path ../x then ok.txt", frame: env(TypeWorkspaceWrite, hostileUUID, wwBegin(`"../x","path":"ok.txt"`)), dir: C, field: "payload.path", rule: RuleConflict},
		{name: "write path then \\u0070ath", frame: env(TypeWorkspaceWrite, hostileUUID, wwBegin(`"../x","\u0070ath":"ok.txt"`)), dir: C, field: "payload.path", rule: RuleConflict},
		{name: "write path ok.txt then ../x", frame: env(TypeWorkspaceWrite, hostileUUID, wwBegin(`"ok.txt","path":"../x"`)), dir: C, field: "payload.path", rule: RuleConflict},
		{name: "write path both escaped differently", frame: env(TypeWorkspaceWrite, hostileUUID, wwBegin(`"a.txt","\u0070\u0061th":"b.txt"`)), dir: C, field: "payload.path", rule: RuleConflict},
		{name: "runtime_prepare file path twice", frame: env(TypeRuntimePrepare, hostileUUID, `{"step":"begin","environment_id":"`+hostileEnv+`","session_id":"`+hostileSess+`","action":"file","file":{"path":"/etc/passwd","path":"/workspace/ok"},"sha256":"`+emptySHA+`"}`), dir: C, field: "payload.file.path", rule: RuleConflict},
		{name: "write receipt with two outcomes", frame: env(TypeWorkspaceWriteResult, hostileUUID, `{"outcome":"rejected","outcome":"completed"}`), dir: R, field: "payload.outcome", rule: RuleConflict},
		{name: "prepare receipt with two outcomes", frame: env(TypeRuntimePrepareResult, hostileUUID, `{"outcome":"ready","outcome":"failed"}`), dir: R, field: "payload.outcome", rule: RuleConflict},
		{name: "ack with two applied", frame: env(TypeInteractionDecisionAck, "perm_1", `{"delivery_id":"d1","applied":false,"error_code":"not_pending","applied":true}`), dir: R, field: "payload.applied", rule: RuleConflict},
		{name: "steer ack with two accepted", frame: env(TypePromptSteerAck, hostileRun, `{"input_id":"i1","accepted":true,"accepted":false}`), dir: R, field: "payload.accepted", rule: RuleConflict},
		{name: "prompt_request with two run_id", frame: env(TypePromptRequest, hostileRun, `{"agent_kind":"codex","run_id":"other","run_id":"`+hostileRun+`","input":[{"content":[{"type":"input_text","text":"hi"}]}]}`), dir: C, field: "payload.run_id", rule: RuleConflict},
		{name: "heartbeat with two kind lists", frame: env(TypeHeartbeat, "", hbWith(`"supported_agent_kinds":[]`)), dir: R, field: "payload.supported_agent_kinds", rule: RuleConflict},
		{name: "capability given twice", frame: env(TypeHeartbeat, "", `{"ts":1,"active_requests":0,"supported_agent_kinds":[`+kind("k", `{"streaming":true,`+caps[1:])+`]}`), dir: R, field: "payload.supported_agent_kinds[0].capabilities.streaming", rule: RuleConflict},
		{name: "repeat deep in args", frame: tool(`{"a":[{"b":1},{"b":1,"c":{"d":1,"\u0064":2}}]}`), dir: R, field: "payload.args.a[1].c.d", rule: RuleConflict},
		{name: "repeat at the end of a wide object", frame: tool(wideObject(5000, "k17")), dir: R, field: "payload.args.k17", rule: RuleConflict},
		{name: "first repeat of a wide object is named", frame: tool(`{"z":1,` + wideObject(40, "z")[1:]), dir: R, field: "payload.args.z", rule: RuleConflict},
		{name: "wide object without repeats", frame: tool(wideObject(5000, "last")), dir: R},
		{name: "env variable twice", frame: env(TypeRuntimePrepare, hostileUUID, `{"step":"begin","environment_id":"`+hostileEnv+`","session_id":"`+hostileSess+`","action":"initialize","initialization":{"action":"configure","env":{"A":"1","A":"2"}}}`), dir: C, field: "payload.initialization.env.A", rule: RuleConflict},
		{name: "read request member twice", frame: env(TypeWorkspaceRead, "op-1", `{"run_id":"r","environment_id":"e","path":"a","path":"b","max_bytes":1}`), dir: C, field: "payload.path", rule: RuleConflict},
		{name: "envelope type twice", frame: []byte(`{"type":"delta","type":"thinking"}`), dir: R, field: "type", rule: RuleConflict},
		{name: "envelope id twice, one escaped", frame: []byte(`{"type":"delta","id":"a","\u0069d":"b","payload":{"delta":"x"}}`), dir: R, field: "id", rule: RuleConflict},
		{name: "envelope payload twice", frame: []byte(`{"type":"delta","id":"a","payload":{"delta":"x"},"payload":{"delta":"y"}}`), dir: R, field: "payload", rule: RuleConflict},
		{name: "names that differ only by case are two members", frame: tool(`{"Path":1,"path":2}`), dir: R},
		{name: "case variant of a payload member", frame: env(TypeDelta, hostileRun, `{"Delta":"x"}`), dir: R, field: "payload.Delta", rule: RuleUnknownField},

		// 3. UTF-8 and surrogates: refused, never replaced.
		{name: "lone high surrogate", frame: delta(`"\ud800"`), dir: R, field: "payload.delta", rule: RuleFormat},
		{name: "lone low surrogate", frame: delta(`"\udfff"`), dir: R, field: "payload.delta", rule: RuleFormat},
		{name: "high surrogate before a letter", frame: delta(`"\ud800\u0041"`), dir: R, field: "payload.delta", rule: RuleFormat},
		{name: "two high surrogates", frame: delta(`"\ud800\ud800"`), dir: R, field: "payload.delta", rule: RuleFormat},
		{name: "surrogate pair", frame: delta(`"\ud83d\ude00"`), dir: R, check: func(t *testing.T, m Message) { require.Equal(t, "😀", m.Payload.(Delta).Delta) }},
		{name: "raw invalid byte", frame: delta("\"a\xffb\""), dir: R, field: "payload.delta", rule: RuleFormat},
		{name: "over-long encoding of ..", frame: env(TypeWorkspaceWrite, hostileUUID, wwBegin("\"\xc0\xae\xc0\xae/x\"")), dir: C, field: "payload.path", rule: RuleFormat},
		{name: "surrogate encoded as UTF-8", frame: delta("\"\xed\xa0\x80\""), dir: R, field: "payload.delta", rule: RuleFormat},
		{name: "truncated UTF-8 sequence", frame: delta("\"\xe2\x82\""), dir: R, field: "payload.delta", rule: RuleFormat},
		{name: "invalid byte in a member name", frame: env(TypeDelta, hostileRun, "{\"\xff\":1}"), dir: R, field: "payload", rule: RuleFormat},
		{name: "lone surrogate in a member name", frame: tool(`{"a\udc00":1}`), dir: R, field: "payload.args", rule: RuleFormat},
		{name: "raw invalid byte in the id", frame: env(TypeDelta, "r\xff", `{"delta":"x"}`), dir: R, field: "id", rule: RuleFormat},
		{name: "lone surrogate in the id", frame: env(TypeDelta, `r\ud800`, `{"delta":"x"}`), dir: R, field: "id", rule: RuleFormat},
		{name: "lone surrogate in the type", frame: env(`delta\ud800`, hostileRun, `{"delta":"x"}`), dir: R, field: "type", rule: RuleFormat},
		{name: "request_id \\ud800", frame: env(TypePermissionRequest, hostileRun, `{"request_id":"\ud800","tool":"Bash","title":"t"}`), dir: R, field: "payload.request_id", rule: RuleFormat},
		{name: "request_id \\udfff", frame: env(TypePermissionRequest, hostileRun, `{"request_id":"\udfff","tool":"Bash","title":"t"}`), dir: R, field: "payload.request_id", rule: RuleFormat},
		{name: "lone surrogate deep in args", frame: tool(`{"x":[{"y":"ok \udbff"}]}`), dir: R, field: "payload.args.x[0].y", rule: RuleFormat},
		{name: "invalid UTF-8 in an ignored heartbeat member", frame: env(TypeHeartbeat, "", hbWith("\"x\":\"\xff\"")), dir: R, field: "payload.x", rule: RuleFormat},
		{name: "NUL in the envelope id", frame: env(TypeDelta, `r\u0000`, `{"delta":"x"}`), dir: R, field: "id", rule: RuleFormat},
		{name: "NUL in a workspace path", frame: env(TypeWorkspaceWrite, hostileUUID, wwBegin(`"a\u0000b"`)), dir: C, field: "payload.path", rule: RuleFormat},
		{name: "NUL in a delivery_id", frame: env(TypePromptCancel, hostileRun, `{"delivery_id":"d\u0000"}`), dir: C, field: "payload.delivery_id", rule: RuleFormat},
		{name: "NUL in a handle", frame: env(TypeExecutionRelease, "prep-1", `{"handle":"h\u0000"}`), dir: C, field: "payload.handle", rule: RuleFormat},
		{name: "NUL in a setup command", frame: env(TypeRuntimePrepare, hostileUUID, `{"step":"begin","environment_id":"`+hostileEnv+`","session_id":"`+hostileSess+`","action":"initialize","initialization":{"action":"setup","command":"ls\u0000"}}`), dir: C, field: "payload.initialization.command", rule: RuleFormat},
		{name: "NUL in free text is text", frame: delta(`"a\u0000b"`), dir: R},

		// 4. Error texts are bounded whatever the value.
		{name: "3 MiB sequence", frame: env(TypeDelta, hostileRun, `{"delta":"x","sequence":`+strings.Repeat("9", 3<<20)+`}`), dir: R, field: "payload.sequence", rule: RuleType},
		{name: "1 MiB heartbeat ts", frame: env(TypeHeartbeat, "", hbWith(`"ts":`+strings.Repeat("7", 1<<20))), dir: R, field: "payload.ts", rule: RuleConflict},
		{name: "1 MiB ts alone", frame: env(TypeHeartbeat, "", `{"ts":`+strings.Repeat("7", 1<<20)+`}`), dir: R, field: "payload.ts", rule: RuleType},
		{name: "1 MiB member name", frame: env(TypeDelta, hostileRun, `{"`+strings.Repeat("n", 1<<20)+`":1}`), dir: R, field: anyField, rule: RuleUnknownField},
		{name: "1 MiB envelope member name", frame: []byte(`{"` + strings.Repeat("n", 1<<20) + `":1}`), dir: R, field: anyField, rule: RuleUnknownField},
		{name: "1 MiB type", frame: env(strings.Repeat("t", 1<<20), "", ""), dir: R, route: ErrUnknownType},
		{name: "1 MiB id", frame: env(TypeDelta, strings.Repeat("i", 1<<20), `{"delta":"x"}`), dir: R, field: "id", rule: RuleTooLarge},
		{name: "1 MiB stage", frame: env(TypeToolCall, hostileRun, `{"id":"c","name":"n","stage":"`+strings.Repeat("s", 1<<20)+`"}`), dir: R, field: "payload.stage", rule: RuleEnum},
		{name: "1 MiB outcome", frame: env(TypeWorkspaceWriteResult, hostileUUID, `{"outcome":"`+strings.Repeat("o", 1<<20)+`"}`), dir: R, field: "payload.outcome", rule: RuleEnum},
		{name: "long repeated kind", frame: env(TypeHeartbeat, "", `{"supported_agent_kinds":[`+kind(strings.Repeat("k", 120), caps)+`,`+kind(strings.Repeat("k", 120), caps)+`]}`), dir: R, field: "payload.supported_agent_kinds[1].kind", rule: RuleConflict},
		{name: "1 MiB kind", frame: env(TypeHeartbeat, "", `{"supported_agent_kinds":[`+kind(strings.Repeat("k", 1<<20), caps)+`]}`), dir: R, field: "payload.supported_agent_kinds[0].kind", rule: RuleTooLarge},
		{name: "1 MiB repeated question id", frame: env(TypePromptForUserChoice, hostileRun, `{"ask_id":"a","questions":[{"id":"`+strings.Repeat("q", 1<<20)+`","question":"x"},{"id":"`+strings.Repeat("q", 1<<20)+`","question":"y"}]}`), dir: R, field: "payload.questions[1].id", rule: RuleConflict},
		{name: "deep path of long names", frame: tool(nested(`{"`+strings.Repeat("n", 4096)+`":`, "1", "}", MaxJSONDepth)), dir: R, field: anyField, rule: RuleTooLarge},
		{name: "deep path to an unknown member", frame: env(TypeToolCall, hostileRun, `{"id":"c","name":"n","stage":"before","observation":{"kind":"k","status":"s","action":{"type":"t","`+strings.Repeat("x", 1<<16)+`":1}}}`), dir: R, field: anyField, rule: RuleUnknownField},
		{name: "member name with a newline", frame: env(TypeDelta, hostileRun, `{"a\nb":1}`), dir: R, field: `payload."a\nb"`, rule: RuleUnknownField},
		{name: "float out of range", frame: env(TypeUsage, hostileRun, `{"cost_usd":1e999}`), dir: R, field: "payload.cost_usd", rule: RuleType},
		{name: "1 MiB float literal", frame: env(TypeUsage, hostileRun, `{"cost_usd":0.`+strings.Repeat("1", 1<<20)+`}`), dir: R},

		// 5. Trace data never rejects a frame.
		{name: "trace null", frame: []byte(`{"type":"delta","id":"r","payload":{"delta":"x"},"trace":null}`), dir: R, check: localTrace},
		{name: "trace a number", frame: []byte(`{"type":"delta","id":"r","payload":{"delta":"x"},"trace":123}`), dir: R, check: localTrace},
		{name: "trace an object", frame: []byte(`{"type":"delta","id":"r","payload":{"delta":"x"},"trace":{}}`), dir: R, check: localTrace},
		{name: "trace an object with a repeat", frame: []byte(`{"type":"delta","id":"r","payload":{"delta":"x"},"trace":{"a":1,"a":[true]}}`), dir: R, check: localTrace},
		{name: "trace garbage text", frame: []byte(`{"type":"delta","id":"r","payload":{"delta":"x"},"trace":"not-a-trace"}`), dir: R, check: localTrace},
		{name: "trace with a lone surrogate", frame: []byte(`{"type":"delta","id":"r","payload":{"delta":"x"},"trace":"00-\ud800"}`), dir: R, check: localTrace},
		{name: "trace with an invalid byte", frame: []byte("{\"type\":\"delta\",\"id\":\"r\",\"payload\":{\"delta\":\"x\"},\"trace\":\"\xff\"}"), dir: R, check: localTrace},
		{name: "trace oversized", frame: []byte(`{"type":"delta","id":"r","payload":{"delta":"x"},"trace":"` + strings.Repeat("0", 300) + `"}`), dir: R, check: func(t *testing.T, m Message) { require.Empty(t, ReplyTrace(m.Trace)); localTrace(t, m) }},
		{name: "trace valid", frame: []byte(`{"type":"delta","id":"r","payload":{"delta":"x"},"trace":"` + goodTrace + `"}`), dir: R, check: func(t *testing.T, m Message) { require.False(t, ParseTrace(m.Trace).Local) }},
		{name: "trace with bad UTF-8, then a raw NUL", frame: []byte("{\"type\":\"delta\",\"id\":\"r\",\"payload\":{\"delta\":\"x\"},\"trace\":\"\xe1\x00\"}"), dir: R, field: "(frame)", rule: RuleSyntax},
		{name: "id with a lone surrogate, then a bad escape", frame: []byte(`{"type":"delta","id":"\udc00\q","payload":{"delta":"x"}}`), dir: R, field: "(frame)", rule: RuleSyntax},
		{name: "trace not JSON", frame: []byte(`{"type":"delta","id":"r","payload":{"delta":"x"},"trace":{]}`), dir: R, field: "(frame)", rule: RuleSyntax},

		// 6. Stop at the first error: an unknown member at the end of a large frame.
		{name: "unknown member after 3 MiB of args", frame: env(TypeToolCall, hostileRun, `{"id":"c","name":"n","stage":"before","args":{"a":"`+strings.Repeat("x", 3<<20)+`"},"zz":1}`), dir: R, field: "payload.zz", rule: RuleUnknownField},
		{name: "syntax error after 3 MiB", frame: env(TypeToolCall, hostileRun, `{"id":"c","name":"n","stage":"before","args":{"a":"`+strings.Repeat("x", 3<<20)+`"},}`), dir: R, field: "payload", rule: RuleSyntax},

		// 7. The smaller rules: one directory rule, canonical base64, no drive letters.
		{name: "capability directory ../../etc", frame: env(TypePromptRequest, hostileRun, `{"agent_kind":"codex","run_id":"`+hostileRun+`","input":[{"content":[{"type":"input_text","text":"hi"}]}],"local_environment":{"id":"`+hostileEnv+`","capability_sources":{"directories":["../../etc"]}}}`), dir: C, field: "payload.local_environment.capability_sources.directories[0]", rule: RuleFormat},
		{name: "capability directory /etc/passwd", frame: env(TypePromptRequest, hostileRun, `{"agent_kind":"codex","run_id":"`+hostileRun+`","input":[{"content":[{"type":"input_text","text":"hi"}]}],"local_environment":{"id":"`+hostileEnv+`","capability_sources":{"directories":["/etc/passwd"]}}}`), dir: C, field: "payload.local_environment.capability_sources.directories[0]", rule: RuleFormat},
		{name: "capability directory under /workspace", frame: env(TypePromptRequest, hostileRun, `{"agent_kind":"codex","run_id":"`+hostileRun+`","input":[{"content":[{"type":"input_text","text":"hi"}]}],"local_environment":{"id":"`+hostileEnv+`","capability_sources":{"directories":["/workspace/skills"]}}}`), dir: C},
		{name: "base64 with a line break", frame: env(TypeWorkspaceWrite, hostileUUID, `{"step":"chunk","data":"aGVs\nbG8="}`), dir: C, field: "payload.data", rule: RuleFormat},
		{name: "base64 with padding bits", frame: env(TypeWorkspaceWrite, hostileUUID, `{"step":"chunk","data":"aGVsbG9="}`), dir: C, field: "payload.data", rule: RuleFormat},
		{name: "base64 unpadded", frame: env(TypeWorkspaceWrite, hostileUUID, `{"step":"chunk","data":"aGVsbG8"}`), dir: C, field: "payload.data", rule: RuleFormat},
		{name: "base64 canonical", frame: env(TypeWorkspaceWrite, hostileUUID, `{"step":"chunk","data":"aGVsbG8="}`), dir: C},
		{name: "path C:/x", frame: env(TypeWorkspaceWrite, hostileUUID, wwBegin(`"C:/x"`)), dir: C, field: "payload.path", rule: RuleFormat},
		{name: "path a:b is a file name", frame: env(TypeWorkspaceWrite, hostileUUID, wwBegin(`"notes/a:b"`)), dir: C},
		{name: "truncated read of nothing", frame: env(TypeWorkspaceReadResult, "op-1", `{"outcome":"completed","truncated":true,"close_acknowledged":true}`), dir: R, field: "payload.truncated", rule: RuleForbidden},

		// The reference's peers: frames the decoder must take.
		{name: "prepare of Session session", frame: env(TypeExecutionPrepare, "prepare", `{"session_id":"session","configuration":{"agent_kind":"contract","agent_state_key":"agents-api-session","strict_resume":true}}`), dir: C},
		{name: "prepare with another Session's state key", frame: env(TypeExecutionPrepare, "prepare", `{"session_id":"session","configuration":{"agent_kind":"contract","agent_state_key":"agents-api-other","strict_resume":true}}`), dir: C, field: "payload.configuration.agent_state_key", rule: RuleConflict},
		{name: "preparing status", frame: env(TypePreparationStatus, "prepare", `{"handle":"handle","revision":1,"state":"preparing"}`), dir: R},
		{name: "ready status", frame: env(TypePreparationStatus, "prepare", `{"executor_id":"executor","handle":"handle","revision":2,"state":"ready","expires_at":1800000000000}`), dir: R},
		{name: "start", frame: env(TypeExecutionStart, "prepare", `{"executor_id":"executor","handle":"handle","run_id":"run","input":[{"content":[{"type":"input_text","text":"hello"}]}]}`), dir: C},
		{name: "started status", frame: env(TypePreparationStatus, "prepare", `{"executor_id":"executor","handle":"handle","revision":4,"state":"started","run_id":"run"}`), dir: R},
		{name: "failed status", frame: env(TypePreparationStatus, "prepare", `{"handle":"handle","revision":2,"state":"failed","error_code":"preparation_failed"}`), dir: R},
		{name: "cancel with its delivery", frame: env(TypePromptCancel, "run", `{"delivery_id":"cancel"}`), dir: C},
		{name: "cancel without a delivery (answered: refused)", frame: env(TypePromptCancel, "run", `{}`), dir: C, field: "payload.delivery_id", rule: RuleRequired},
		{name: "empty done", frame: env(TypeDone, "run", `{}`), dir: R},
		{name: "cancel receipt with its outcome", frame: env(TypeInteractionDecisionAck, "run", `{"delivery_id":"cancel","applied":true,"outcome":{"content":"partial","metadata":{"agent_session_id":"native-session"}}}`), dir: R},
		{name: "observation-only tool call", frame: env(TypeToolCall, "run", `{"id":"c1","name":"","stage":"after","observation":{"kind":"command","status":"completed"}}`), dir: R},
		{name: "heartbeat in seconds with ts 0", frame: env(TypeHeartbeat, "", `{"ts":0,"active_requests":0}`), dir: R},
		{name: "heartbeat in Unix seconds", frame: env(TypeHeartbeat, "", `{"ts":1800000000,"active_requests":1,"daemon_version":"0.10.0","supported_agent_kinds":[`+kind("contract", caps)+`]}`), dir: R},
		{name: "heartbeat with an additive member", frame: env(TypeHeartbeat, "", hbWith(`"home_removal":true`)), dir: R},
		{name: "heartbeat kind with an unknown member", frame: env(TypeHeartbeat, "", `{"ts":1,"supported_agent_kinds":[{"kind":"k","available":true,"extra":1,"capabilities":`+caps+`}]}`), dir: R, field: "payload.supported_agent_kinds[0].extra", rule: RuleUnknownField},
		{name: "heartbeat kind with an unknown capability", frame: env(TypeHeartbeat, "", `{"ts":1,"supported_agent_kinds":[`+kind("k", `{"teleport":true,`+caps[1:])+`]}`), dir: R, field: "payload.supported_agent_kinds[0].capabilities.teleport", rule: RuleUnknownField},
		{name: "heartbeat ts a string", frame: env(TypeHeartbeat, "", `{"ts":"1"}`), dir: R, field: "payload.ts", rule: RuleType},
		{name: "unknown write rejection reason", frame: env(TypeWorkspaceWriteResult, hostileUUID, `{"outcome":"rejected","error_code":"write_rejected","reason":"quota_exceeded"}`), dir: R, check: func(t *testing.T, m Message) { require.Empty(t, m.Payload.(WorkspaceWriteResult).KnownReason()) }},
		{name: "oversized write rejection reason", frame: env(TypeWorkspaceWriteResult, hostileUUID, `{"outcome":"rejected","error_code":"write_rejected","reason":"`+strings.Repeat("r", MaxWriteReasonBytes+1)+`"}`), dir: R, field: "payload.reason", rule: RuleTooLarge},
		{name: "whitespace-only steering", frame: env(TypePromptSteer, "run", `{"input_id":"i1","durable_receipt":true,"input":[{"content":[{"type":"input_text","text":"  "}]}]}`), dir: C, check: func(t *testing.T, m Message) { require.True(t, m.Payload.(PromptSteer).Input.WhitespaceOnly()) }},
		{name: "steering with no text at all", frame: env(TypePromptSteer, "run", `{"input_id":"i1","input":[{"content":[{"type":"input_text","text":""}]}]}`), dir: C, field: "payload.input[0].content", rule: RuleRequired},
		{name: "blank error text with a code", frame: env(TypeError, "run", `{"error":"","code":"server_error"}`), dir: R, check: func(t *testing.T, m Message) {
			code, _, ok := ClassifyEngineFailure(m.Payload.(ErrorFrame))
			require.True(t, ok)
			require.Equal(t, EngineServerError, code)
		}},
		{name: "delta sequence 0", frame: env(TypeDelta, "run", `{"delta":"Hi","sequence":0}`), dir: R},
		{name: "question with options null", frame: env(TypePromptForUserChoice, "run", `{"ask_id":"ask_1","questions":[{"id":"q1","question":"Why?","options":null}]}`), dir: R},
		{name: "permission request with an empty title", frame: env(TypePermissionRequest, "run", `{"request_id":"perm_1","tool":"Bash","title":""}`), dir: R},

		// Everything else a peer can send.
		{name: "frame over 4 MiB", frame: []byte(`{"type":"delta","zz":"` + strings.Repeat("x", MaxFrameBytes) + `"}`), dir: R, field: "frame", rule: RuleTooLarge},
		{name: "empty frame", frame: nil, dir: R, field: "(frame)", rule: RuleSyntax},
		{name: "whitespace frame", frame: []byte(" \n\t"), dir: R, field: "(frame)", rule: RuleSyntax},
		{name: "null frame", frame: []byte("null"), dir: R, field: "(frame)", rule: RuleType},
		{name: "string frame", frame: []byte(`"delta"`), dir: R, field: "(frame)", rule: RuleType},
		{name: "two objects", frame: []byte(`{"type":"done","id":"r"}{"type":"done","id":"r"}`), dir: R, field: "(frame)", rule: RuleSyntax},
		{name: "byte order mark", frame: append([]byte("\xef\xbb\xbf"), env(TypeDone, "r", "{}")...), dir: R, field: "(frame)", rule: RuleSyntax},
		{name: "raw control character", frame: delta("\"a\tb\""), dir: R, field: "payload", rule: RuleSyntax},
		{name: "unknown escape", frame: delta(`"\x41"`), dir: R, field: "payload", rule: RuleSyntax},
		{name: "short \\u escape", frame: delta(`"\u12"`), dir: R, field: "payload", rule: RuleSyntax},
		{name: "unterminated string", frame: []byte(`{"type":"delta","id":"r","payload":{"delta":"x}}`), dir: R, field: "(frame)", rule: RuleSyntax},
		{name: "leading zero", frame: env(TypeDelta, "r", `{"delta":"x","sequence":01}`), dir: R, field: "payload", rule: RuleSyntax},
		{name: "bare minus", frame: env(TypeDelta, "r", `{"delta":"x","sequence":-}`), dir: R, field: "payload", rule: RuleSyntax},
		{name: "bad literal", frame: env(TypeDelta, "r", `{"delta":nul}`), dir: R, field: "payload", rule: RuleSyntax},
		{name: "trailing comma", frame: env(TypeDelta, "r", `{"delta":"x",}`), dir: R, field: "payload", rule: RuleSyntax},
		{name: "uint64 overflow", frame: env(TypeDelta, "r", `{"delta":"x","sequence":18446744073709551616}`), dir: R, field: "payload.sequence", rule: RuleType},
		{name: "uint64 maximum", frame: env(TypeDelta, "r", `{"delta":"x","sequence":18446744073709551615}`), dir: R},
		{name: "negative sequence", frame: env(TypeDelta, "r", `{"delta":"x","sequence":-1}`), dir: R, field: "payload.sequence", rule: RuleType},
		{name: "-0 sequence", frame: env(TypeDelta, "r", `{"delta":"x","sequence":-0}`), dir: R, field: "payload.sequence", rule: RuleType},
		{name: "exponent for an integer", frame: env(TypeDelta, "r", `{"delta":"x","sequence":1e2}`), dir: R, field: "payload.sequence", rule: RuleType},
		{name: "int32 overflow", frame: env(TypeUsage, "r", `{"input_tokens":2147483648}`), dir: R, field: "payload.input_tokens", rule: RuleType},
		{name: "int32 minimum", frame: env(TypeUsage, "r", `{"input_tokens":-2147483648}`), dir: R, field: "payload.input_tokens", rule: RuleRange},
		{name: "int64 overflow in a nested count", frame: env(TypeUsage, "r", `{"tokens":{"input_tokens":9223372036854775808,"cached_input_tokens":0,"output_tokens":0,"reasoning_output_tokens":0,"total_tokens":0}}`), dir: R, field: "payload.tokens.input_tokens", rule: RuleType},
		{name: "string where an object goes", frame: env(TypeToolCall, "r", `{"id":"c","name":"n","stage":"before","observation":"x"}`), dir: R, field: "payload.observation", rule: RuleType},
		{name: "object where a string goes", frame: env(TypeDelta, "r", `{"delta":{}}`), dir: R, field: "payload.delta", rule: RuleType},
		{name: "array where a boolean goes", frame: env(TypePermissionDecision, "perm_1", `{"delivery_id":"d","approved":[]}`), dir: C, field: "payload.approved", rule: RuleType},
		{name: "wrong kind at an index", frame: env(TypeExecutionStart, "p", `{"executor_id":"e","handle":"h","run_id":"r","input":[{"content":[{"type":"input_text","text":"x"},{"type":7}]}]}`), dir: C, field: "payload.input[0].content[1].type", rule: RuleType},
		{name: "null payload of a bodyless frame", frame: []byte(`{"type":"done","id":"r","payload":null}`), dir: R},
		{name: "unknown type", frame: env("teleport", "r", "{}"), dir: R, route: ErrUnknownType},
		{name: "type in another case", frame: env("Delta", "r", "{}"), dir: R, route: ErrUnknownType},
		{name: "wrong direction", frame: env(TypeDelta, "r", `{"delta":"x"}`), dir: C, route: ErrDirection},
		{name: "envelope member in another case", frame: []byte(`{"type":"delta","id":"r","Payload":{}}`), dir: R, field: "Payload", rule: RuleUnknownField},
		{name: "run_id that is not the envelope id", frame: env(TypePromptRequest, hostileRun, `{"agent_kind":"codex","run_id":"other","input":[{"content":[{"type":"input_text","text":"hi"}]}]}`), dir: C, field: "payload.run_id", rule: RuleConflict},
		{name: "id where none goes", frame: env(TypeHeartbeat, "x", `{}`), dir: R, field: "id", rule: RuleForbidden},
		{name: "transfer id not a UUID", frame: env(TypeRuntimePrepareResult, "abc", `{"outcome":"ready"}`), dir: R, field: "id", rule: RuleFormat},
	}
	return append(cases, badFileCases(t)...)
}

// localTrace: the frame was accepted, and its trace yields a fresh local one.
func localTrace(t *testing.T, m Message) {
	t.Helper()
	require.True(t, ParseTrace(m.Trace).Local)
}

// badFileCases wraps every payload bad case of testdata/bad in a frame of
// its type; Decode must refuse it naming the same field and rule.
func badFileCases(t testing.TB) []hostileCase {
	var out []hostileCase
	for _, e := range Entries() {
		var bad []badCase
		b, err := os.ReadFile(filepath.Join("testdata", "bad", e.Type+".json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &bad))
		for _, c := range bad {
			out = append(out, hostileCase{
				name:  "bad/" + e.Type + "/" + c.Name,
				frame: env(e.Type, exampleID(e), string(c.Payload)),
				dir:   e.Direction, field: c.Field, rule: c.Rule,
			})
		}
	}
	return out
}

func TestHostileFrames(t *testing.T) {
	cases := hostileCases(t)
	handWritten := len(cases) - len(badFileCases(t))
	require.GreaterOrEqual(t, handWritten, 100, "the table keeps at least 100 crafted frames")
	names := map[string]bool{}
	for _, c := range cases {
		require.False(t, names[c.name], "case names are unique: %s", c.name)
		names[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			m, err := Decode(c.frame, c.dir)
			if c.field == "" && c.route == nil {
				require.NoError(t, err)
				if c.check != nil {
					c.check(t, m)
				}
				return
			}
			require.Error(t, err)
			require.LessOrEqual(t, len(err.Error()), MaxErrorBytes, "error text is bounded: %.300q", err.Error())
			if c.route != nil {
				require.ErrorIs(t, err, c.route)
				return
			}
			var fe *FieldError
			require.True(t, errors.As(err, &fe), "%T %v", err, err)
			if c.field != anyField {
				require.Equal(t, c.field, fe.Field, "error: %v", err)
			}
			require.Equal(t, c.rule, fe.Rule, "error: %v", err)
		})
	}
}

// Every error text of the table is bounded in the other direction too
// (TestHostileFrames checks the frame's own), and so is every field a
// FieldError names, however the input was built.
func TestErrorTextsAreBounded(t *testing.T) {
	for _, c := range hostileCases(t) {
		other := CoreToRuntime
		if c.dir == CoreToRuntime {
			other = RuntimeToCore
		}
		if _, err := Decode(c.frame, other); err != nil {
			require.LessOrEqual(t, len(err.Error()), MaxErrorBytes, "%s: %.200q", c.name, err.Error())
		}
	}
	long := strings.Repeat("é", 10000)
	fe := fieldErr(long, long, RuleFormat, long)
	require.LessOrEqual(t, len(fe.Error())-len(long), MaxErrorBytes)
	require.True(t, strings.HasSuffix(fe.Field, "é"), "a cut path keeps its end and whole runes")
}

// Encode refuses what Decode would refuse or what encoding/json would
// alter on the way out: the same rules in both directions.
func TestEncodeRefusesWhatDecodeRefuses(t *testing.T) {
	_, err := Encode(hostileRun, Delta{Delta: "a\xffb"}, "")
	requireFieldError(t, err, "payload.delta", RuleFormat)

	_, err = Encode(hostileRun, Delta{Delta: "ok"}, "00-\xff")
	requireFieldError(t, err, "trace", RuleFormat)

	call := ToolCall{ID: "c", Stage: ToolStageBefore, Args: NativeJSON(`{"a":1,"a":2}`)}
	_, err = Encode(hostileRun, call, "")
	requireFieldError(t, err, "payload.args.a", RuleConflict)

	call.Args = NativeJSON(nested("[", "", "]", MaxJSONDepth+1))
	_, err = Encode(hostileRun, call, "")
	requireFieldError(t, err, anyFieldOf(err), RuleTooLarge)

	env := RuntimePrepare{Step: StepBegin, EnvironmentID: hostileEnv, SessionID: hostileSess, Action: PrepareInitialize,
		Initialization: &RuntimePrepareInitialization{Action: "configure", Env: map[string]string{"A": "1", "B\xff": "2"}}}
	_, err = Encode(hostileUUID, env, "")
	requireFieldError(t, err, `payload.initialization.env."B\xff"`, RuleFormat)

	call = ToolCall{ID: "c", Stage: ToolStageBefore, Observation: &ToolObservation{Kind: "k", Status: "s", Command: "ls \xff"}}
	_, err = Encode(hostileRun, call, "")
	requireFieldError(t, err, "payload.observation.command", RuleFormat, "no validator looks at the command; Encode still refuses it")

	out, err := Encode(hostileRun, Delta{Delta: "é 😀"}, goodTrace)
	require.NoError(t, err)
	_, err = Decode(out, RuntimeToCore)
	require.NoError(t, err)
}

// anyFieldOf is the field err names, for a case that checks only the rule.
func anyFieldOf(err error) string {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}
