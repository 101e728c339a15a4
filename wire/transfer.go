package wire

import (
	"slices"
	"strconv"
)

// Transfers. runtime_prepare and workspace_write move a body the same way:
// begin opens the transfer with a header that binds it to an Environment
// and a Session and declares the body, each chunk carries the next bytes at
// the offset received so far, and commit applies it; every step gets one
// receipt. This file holds that shape once. A kind adds its own begin-only
// members and begin rules, and its own outcomes and refusal codes.

// Steps of a transfer (runtime_prepare and workspace_write).
const (
	StepBegin  = "begin"
	StepChunk  = "chunk"
	StepCommit = "commit"
)

// transferSteps lists the steps in the order errors name them.
var transferSteps = []string{StepBegin, StepChunk, StepCommit}

// emptySHA256 is the digest of zero bytes: the only digest an empty body
// can declare.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// transferStep is what every step of a transfer has, whatever its kind.
type transferStep struct {
	step          string
	environmentID string
	sessionID     string
	// header lists the kind's own begin-only members in field order, each
	// with whether it is present; chunk and commit carry none of them.
	header []transferMember
	offset int64
	data   int // the number of data bytes
}

// transferMember is one begin-only member of a kind's header.
type transferMember struct {
	name    string
	present bool
}

// validate checks the shape every step shares. A chunk or commit carries no
// header member, and the offset and data its step allows. A begin binds a
// canonical Environment and Session UUID, meets the kind's own rules
// (begin, run in between so that errors keep field order), and carries no
// offset or data, which only chunks have.
func (s transferStep) validate(c *checker, begin func()) {
	c.oneOf("step", s.step, transferSteps...)
	if !c.ok() {
		return
	}
	if s.step != StepBegin {
		s.noHeader(c, "environment_id", s.environmentID != "")
		s.noHeader(c, "session_id", s.sessionID != "")
		for _, m := range s.header {
			s.noHeader(c, m.name, m.present)
		}
		s.validateBody(c)
		return
	}
	c.uuid("environment_id", s.environmentID)
	c.uuid("session_id", s.sessionID)
	begin()
	c.forbidden("offset", s.offset != 0, "begin starts at offset 0")
	c.forbidden("data", s.data > 0, "begin carries no data; send it in chunks")
}

// noHeader forbids a begin-only member on a chunk or commit. The message
// is built only for a member that is present: every chunk of a transfer
// runs this for every header member.
func (s transferStep) noHeader(c *checker, member string, present bool) {
	if present {
		c.fail(member, RuleForbidden, "only begin carries "+member+", not "+s.step)
	}
}

// validateBody checks offset and data of a chunk or commit: a chunk carries
// 1..ChunkBytes bytes at an offset within MaxTransferBytes, a commit neither.
func (s transferStep) validateBody(c *checker) {
	if s.step == StepCommit {
		c.forbidden("offset", s.offset != 0, "commit carries offset 0")
		c.forbidden("data", s.data > 0, "commit carries no data")
		return
	}
	c.rangeInt("offset", s.offset, 0, MaxTransferBytes)
	c.chunkData(s.offset, s.data, MaxTransferBytes, "transfer")
}

// transferDigest checks the sha256 a begin declares for its body; an empty
// body (size absent or 0) can declare only the digest of zero bytes.
func transferDigest(c *checker, digest string, size *int64) {
	switch {
	case digest == "":
		c.fail("sha256", RuleRequired, "a body declares its SHA-256")
	case !IsSHA256Hex(digest):
		c.fail("sha256", RuleFormat, "must be 64 lower-case hex digits")
	case (size == nil || *size == 0) && digest != emptySHA256:
		c.fail("sha256", RuleConflict, "an empty body has the SHA-256 of zero bytes")
	}
}

// answeredBy checks an already valid receipt of message type typ against
// the step it answers; declared is the size the begin declared. Which
// outcome may answer which step is the catalog's answers table
// (spec/catalog.yaml), which the transfer machines are checked against too:
// the success of each step (ready for begin, received for a chunk,
// completed for commit), rejected for any step, and failed and unknown only
// for a commit, since only a commit applies anything. received must name
// the offset after the chunk's bytes, completed the declared size. Paths
// start at "payload".
func (s transferStep) answeredBy(typ string, declared int64, outcome string, offset, size int64) *FieldError {
	c := newChecker(typ)
	e, _ := Lookup(typ)
	received := s.offset + int64(s.data)
	switch {
	case !slices.Contains(transferSteps, s.step):
		c.fail("payload.outcome", RuleConflict, "answers no valid step")
	case !e.MayAnswer(outcome, s.step):
		c.fail("payload.outcome", RuleConflict, "a "+s.step+" is not answered by "+outcome)
	case outcome == "received" && offset != received:
		c.fail("payload.offset", RuleConflict, "must be the bytes received: "+strconv.Itoa(int(received)))
	case outcome == "completed" && size != declared:
		c.fail("payload.size_bytes", RuleConflict, "must be the declared size "+strconv.Itoa(int(declared)))
	}
	return c.first
}

// transferReceipts describes the receipts of one kind of transfer.
type transferReceipts struct {
	// outcomes are the kind's outcomes, in the order errors name them: the
	// successes ready, received and completed, then the kind's refusals.
	outcomes []string
	// codes holds the closed error-code list of each refusing outcome.
	codes outcomeCodes
}

// validate checks what every receipt shares and reports whether the outcome
// is known, so the kind's own rules can follow: only received carries an
// offset (at least 1, as a chunk has at least a byte), only completed a
// size, both within MaxTransferBytes, and a refusal carries a code from its
// closed list while a success carries none.
func (k transferReceipts) validate(c *checker, outcome string, offset, size int64, code string) bool {
	c.oneOf("outcome", outcome, k.outcomes...)
	if !c.ok() {
		return false
	}
	if outcome == "received" {
		c.rangeInt("offset", offset, 1, MaxTransferBytes)
	} else {
		c.forbidden("offset", offset != 0, "only a received receipt carries an offset")
	}
	if outcome == "completed" {
		c.rangeInt("size_bytes", size, 0, MaxTransferBytes)
	} else {
		c.forbidden("size_bytes", size != 0, "only a completed receipt carries size_bytes")
	}
	c.errorCode(outcome, code, k.codes, "receipt")
	return true
}
