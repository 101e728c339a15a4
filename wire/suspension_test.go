package wire

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQuiesceRefusesRollbackByName(t *testing.T) {
	_, err := decodePayload[EnvironmentQuiesce]("environment_quiesce", []byte(`{"environment_id":"e","suspend_id":"s","rollback":true}`))
	requireFieldError(t, err, "payload.rollback", RuleForbidden)
	require.Contains(t, err.Error(), "environment_resume", "the message says where rollback belongs")

	// Other unknown members stay unknown members.
	_, err = decodePayload[EnvironmentQuiesce]("environment_quiesce", []byte(`{"environment_id":"e","suspend_id":"s","force":true}`))
	requireFieldError(t, err, "payload.force", RuleUnknownField)
}

func TestSuspensionDriveKeys(t *testing.T) {
	yes, no := true, false
	require.Equal(t, "resume", EnvironmentResume{EnvironmentID: "e", SuspendID: "s"}.DriveKey())
	require.Equal(t, "rollback", EnvironmentResume{EnvironmentID: "e", SuspendID: "s", Rollback: true}.DriveKey())
	require.Equal(t, "accepted", EnvironmentQuiesced{Accepted: &yes}.DriveKey())
	require.Equal(t, "refused", EnvironmentQuiesced{Accepted: &no}.DriveKey())
	require.Equal(t, "", EnvironmentQuiesced{}.DriveKey())
	require.Equal(t, "accepted", EnvironmentResumed{Accepted: &yes}.DriveKey())
	require.Equal(t, "refused", EnvironmentResumed{Accepted: &no}.DriveKey())
	require.Equal(t, "", EnvironmentResumed{}.DriveKey())
}

func TestSuspensionRepliesAnswer(t *testing.T) {
	yes, no := true, false
	quiesce := EnvironmentQuiesce{EnvironmentID: "env-1", SuspendID: "suspend-1"}
	cases := []struct {
		name  string
		r     EnvironmentQuiesced
		field string
		rule  Rule
	}{
		{name: "accepted", r: EnvironmentQuiesced{EnvironmentID: "env-1", SuspendID: "suspend-1", Accepted: &yes}},
		{name: "refused", r: EnvironmentQuiesced{EnvironmentID: "env-1", SuspendID: "suspend-1", Accepted: &no, ErrorCode: "resource_busy"}},
		{name: "another Environment", r: EnvironmentQuiesced{EnvironmentID: "env-2", SuspendID: "suspend-1", Accepted: &yes}, field: "payload.environment_id", rule: RuleConflict},
		{name: "another suspension", r: EnvironmentQuiesced{EnvironmentID: "env-1", SuspendID: "suspend-0", Accepted: &yes}, field: "payload.suspend_id", rule: RuleConflict},
		{name: "accepted with a code", r: EnvironmentQuiesced{EnvironmentID: "env-1", SuspendID: "suspend-1", Accepted: &yes, ErrorCode: "resource_busy"}, field: "payload.error_code", rule: RuleForbidden},
		{name: "refused without a code", r: EnvironmentQuiesced{EnvironmentID: "env-1", SuspendID: "suspend-1", Accepted: &no}, field: "payload.error_code", rule: RuleRequired},
	}
	for _, tc := range cases {
		requireAnswer(t, tc.r.Answers(quiesce), "environment_quiesced", tc.field, tc.rule, tc.name)
	}

	// The rollback flag is no part of the suspension's identity.
	rollback := EnvironmentResume{EnvironmentID: "env-1", SuspendID: "suspend-1", Rollback: true}
	require.Nil(t, EnvironmentResumed{EnvironmentID: "env-1", SuspendID: "suspend-1", Accepted: &yes}.Answers(rollback))
	fe := EnvironmentResumed{EnvironmentID: "env-1", SuspendID: "suspend-2", Accepted: &no, ErrorCode: "not_suspended"}.Answers(rollback)
	require.NotNil(t, fe)
	require.Equal(t, "environment_resumed", fe.Type)
	require.Equal(t, "payload.suspend_id", fe.Field)
}

func TestSuspensionIDBounds(t *testing.T) {
	p := EnvironmentResume{EnvironmentID: strings.Repeat("e", MaxIDBytes), SuspendID: strings.Repeat("s", MaxIDBytes)}
	require.NoError(t, p.Validate())
	p.SuspendID += "s"
	requireFieldError(t, p.Validate(), "suspend_id", RuleTooLarge)
}
