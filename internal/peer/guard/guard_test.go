package guard_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentwire/agentwire/internal/peer/guard"
	"github.com/agentwire/agentwire/wire"
)

func TestPredicates(t *testing.T) {
	yes, no := true, false
	status := wire.PreparationStatus{State: wire.PreparationRejected, Operation: wire.PreparationOpPrepare, ErrorCode: wire.PrepCodePreparationCapacity, Revision: 3}
	prep := wire.ExecutionPrepare{SessionID: "ses"}
	ack := wire.InteractionDecisionAck{DeliveryID: "d1", ErrorCode: guard.CodeNotReady}
	sent := func(d string) bool { return d == "d1" }
	dir := wire.WorkspaceReadResult{CloseAcknowledged: true, Directory: &wire.WorkspaceDirectory{}}
	cases := []struct {
		name string
		got  bool
		want bool
	}{
		{"newer revision", guard.NewerRevision(status, 2), true},
		{"same revision", guard.NewerRevision(status, 3), false},
		{"revision of another payload", guard.NewerRevision(prep, 0), false},
		{"capacity refusal", guard.CapacityRefusal(status), true},
		{"rejects prepare", guard.RejectsPrepare(status), true},
		{"rejects start", guard.RejectsStart(status), false},
		{"same fingerprint", guard.SameFingerprint(prep, guard.Fingerprint(prep)), true},
		{"another fingerprint", guard.SameFingerprint(wire.ExecutionPrepare{SessionID: "other"}, guard.Fingerprint(prep)), false},
		{"a bare heartbeat declares nothing wrong", guard.ValidDeclaration(wire.Heartbeat{}), true},
		{"not a heartbeat", guard.ValidDeclaration(status), false},
		{"cancel delivery sent", guard.MatchesCancelDelivery(ack, func(d string) bool { return d == "d1" }), true},
		{"cancel delivery never sent", guard.MatchesCancelDelivery(wire.InteractionDecisionAck{}, func(string) bool { return true }), false},
		{"killed cancellation", guard.UnsettledCancel(wire.InteractionDecisionAck{DeliveryID: "d1", Applied: &no, ErrorCode: wire.InteractionCodeRuntimeError}, sent), true},
		{"killed, another delivery", guard.UnsettledCancel(wire.InteractionDecisionAck{DeliveryID: "d2", Applied: &no, ErrorCode: wire.InteractionCodeRuntimeError}, sent), false},
		{"refused cancellation", guard.UnsettledCancel(wire.InteractionDecisionAck{DeliveryID: "d1", Applied: &no, ErrorCode: wire.InteractionCodeRunInactive}, sent), false},
		{"applied cancellation", guard.UnsettledCancel(wire.InteractionDecisionAck{DeliveryID: "d1", Applied: &yes}, sent), false},
		{"retryable", guard.RetryableCode(wire.PromptSteerAck{ErrorCode: guard.CodeBusy}), true},
		{"not retryable", guard.RetryableCode(wire.PromptSteerAck{ErrorCode: "invalid_input"}), false},
		{"unknown", guard.UnknownCode(wire.PromptSteerAck{ErrorCode: guard.CodeOutcomeUnknown}), true},
		{"current delivery", guard.CurrentDelivery(ack, "d1"), true},
		{"old delivery", guard.CurrentDelivery(ack, "d2"), false},
		{"retry later", guard.RetryLater(ack, "d1"), true},
		{"retry later of another delivery", guard.RetryLater(ack, "d0"), false},
		{"own suspension", guard.OwnSuspension(wire.EnvironmentQuiesced{EnvironmentID: "e", SuspendID: "s", Accepted: &yes}, "s", "e"), true},
		{"accepted with a code", guard.OwnSuspension(wire.EnvironmentQuiesced{EnvironmentID: "e", SuspendID: "s", Accepted: &yes, ErrorCode: "x"}, "s", "e"), false},
		{"refused own suspension", guard.OwnSuspension(wire.EnvironmentResumed{EnvironmentID: "e", SuspendID: "s", Accepted: &no, ErrorCode: "not_suspended"}, "s", "e"), true},
		{"foreign suspension", guard.OwnSuspension(wire.EnvironmentQuiesced{EnvironmentID: "e", SuspendID: "t", Accepted: &yes}, "s", "e"), false},
		{"resume matches", guard.ResumeMatchesQuiesce(wire.EnvironmentResume{EnvironmentID: "e"}, "e"), true},
		{"resume before any quiesce", guard.ResumeMatchesQuiesce(wire.EnvironmentResume{}, ""), false},
		{"close acknowledged, truncation unsaid", guard.CloseAcknowledged(dir), false},
		{"close acknowledged", guard.CloseAcknowledged(wire.WorkspaceReadResult{CloseAcknowledged: true}), true},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, c.got, c.name)
	}
}
