package wire

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// heartbeatCaps returns a complete declaration with every field set to s.
func heartbeatCaps(s CapabilitySupport) AgentKindCapabilities {
	var c AgentKindCapabilities
	for _, f := range CapabilityFields() {
		*f.Of(&c) = s
	}
	return c
}

func heartbeatFixture() Heartbeat {
	yes, no := true, false
	return Heartbeat{
		TS: 1800000000000, ActiveRequests: 1, DaemonVersion: "1.0.0",
		SupportedAgentKinds: []SupportedAgentKind{
			{Kind: "claude_code", Available: &yes, Version: "2.0.0", Capabilities: heartbeatCaps(Supported)},
			{Kind: "codex", Available: &no, Capabilities: heartbeatCaps(Unsupported)},
		},
	}
}

// Every capability missing, null or mistyped in the second kind is named
// with its full path through decodePayload.
func TestHeartbeatNamesEveryCapabilityField(t *testing.T) {
	raw, err := json.Marshal(heartbeatFixture())
	require.NoError(t, err)
	for _, f := range CapabilityFields() {
		for name, mutate := range map[string]func(map[string]json.RawMessage){
			"omitted": func(m map[string]json.RawMessage) { delete(m, f.Name) },
			"null":    func(m map[string]json.RawMessage) { m[f.Name] = json.RawMessage("null") },
			"string":  func(m map[string]json.RawMessage) { m[f.Name] = json.RawMessage(`"true"`) },
		} {
			var hb map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(raw, &hb))
			var kinds []map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(hb["supported_agent_kinds"], &kinds))
			var caps map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(kinds[1]["capabilities"], &caps))
			mutate(caps)
			kinds[1]["capabilities"], err = json.Marshal(caps)
			require.NoError(t, err)
			hb["supported_agent_kinds"], err = json.Marshal(kinds)
			require.NoError(t, err)
			bad, err := json.Marshal(hb)
			require.NoError(t, err)

			_, err = decodePayload[Heartbeat]("heartbeat", bad)
			var fe *FieldError
			require.ErrorAs(t, err, &fe, "%s %s", f.Name, name)
			require.Equal(t, "heartbeat", fe.Type)
			require.Equal(t, "payload.supported_agent_kinds[1].capabilities."+f.Name, fe.Field, "%s %s", f.Name, name)
		}
	}
}

func TestHeartbeatValidateConstructed(t *testing.T) {
	hb := heartbeatFixture()
	require.NoError(t, hb.Validate())

	hb = heartbeatFixture()
	hb.SupportedAgentKinds[1].Capabilities.Steering = CapabilityUnspecified
	requireFieldError(t, hb.Validate(), "supported_agent_kinds[1].capabilities.steering", RuleRequired)

	hb = heartbeatFixture()
	hb.SupportedAgentKinds[1].Capabilities = AgentKindCapabilities{}
	requireFieldError(t, hb.Validate(), "supported_agent_kinds[1].capabilities.streaming", RuleRequired)

	hb = heartbeatFixture()
	hb.SupportedAgentKinds[0].Available = nil
	requireFieldError(t, hb.Validate(), "supported_agent_kinds[0].available", RuleRequired)

	hb = heartbeatFixture()
	hb.SupportedAgentKinds[1].Kind = "claude_code"
	requireFieldError(t, hb.Validate(), "supported_agent_kinds[1].kind", RuleConflict)

	// The informational members are not checked: ts 0 (the reference's
	// tests send it), a negative count.
	hb = heartbeatFixture()
	hb.TS, hb.ActiveRequests = 0, -1
	require.NoError(t, hb.Validate())

	// An incomplete declaration cannot even be encoded.
	hb = heartbeatFixture()
	hb.SupportedAgentKinds[0].Capabilities.MCPHTTPBearerAuth = CapabilityUnspecified
	_, err := json.Marshal(hb)
	require.ErrorContains(t, err, "mcp_http_bearer_auth")
}

func TestHeartbeatEncodesRequiredMembers(t *testing.T) {
	out, err := json.Marshal(Heartbeat{TS: 5})
	require.NoError(t, err)
	require.JSONEq(t, `{"ts":5,"active_requests":0}`, string(out))

	out, err = json.Marshal(heartbeatFixture())
	require.NoError(t, err)
	back, err := decodePayload[Heartbeat]("heartbeat", out)
	require.NoError(t, err)
	require.Equal(t, heartbeatFixture(), back)
	require.Contains(t, string(out), `"available":false`, "false is written, never dropped")
}

func TestHeartbeatAgentKind(t *testing.T) {
	hb := heartbeatFixture()

	k, ok := hb.AgentKind("claude_code")
	require.True(t, ok)
	require.True(t, k.IsAvailable())
	require.Equal(t, Supported, k.Capabilities.Streaming)

	k, ok = hb.AgentKind("codex")
	require.True(t, ok, "an unavailable kind is still declared")
	require.False(t, k.IsAvailable())

	// A kind missing from the heartbeat is not advertised: nothing is
	// returned to infer from, not even a zero declaration that looks valid.
	k, ok = hb.AgentKind("gemini")
	require.False(t, ok)
	require.Equal(t, SupportedAgentKind{}, k)
	require.Error(t, k.Capabilities.Validate())

	_, ok = Heartbeat{TS: 1}.AgentKind("claude_code")
	require.False(t, ok, "a heartbeat without kinds advertises none")
}

func TestHeartbeatNullKindsAreAbsent(t *testing.T) {
	hb, err := decodePayload[Heartbeat]("heartbeat", []byte(`{"ts":1,"active_requests":0,"supported_agent_kinds":null,"daemon_version":null}`))
	require.NoError(t, err)
	require.Nil(t, hb.SupportedAgentKinds)
	require.Empty(t, hb.DaemonVersion)
}

// TestHeartbeatTSSecondsOrMilliseconds: the reference daemon sends ts in
// Unix seconds, an older agentwire daemon sent milliseconds; ts is
// information only, so a Core takes either (and 0) without closing the
// connection.
func TestHeartbeatTSSecondsOrMilliseconds(t *testing.T) {
	for _, ts := range []string{"1800000000", "1800000000000", "0"} {
		m, err := Decode([]byte(`{"type":"heartbeat","payload":{"ts":`+ts+`,"active_requests":0}}`), RuntimeToCore)
		require.NoError(t, err, ts)
		require.Equal(t, ts, strconv.FormatInt(m.Payload.(Heartbeat).TS, 10))
	}
}
