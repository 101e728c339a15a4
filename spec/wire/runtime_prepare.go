package wire

import (
	"path"
	"sort"
	"strings"
	"unicode/utf8"
)

// Limits of runtime_prepare that limits.go does not name.
const (
	// MaxRuntimePrepareSources bounds each list (skills, plugins,
	// directories) of a finalize step's sources.
	MaxRuntimePrepareSources = 50
	// MaxRuntimePrepareBudgetMS bounds the optional budget_ms of a begin
	// step: the whole preparation may take at most 30 minutes.
	MaxRuntimePrepareBudgetMS = 30 * 60 * 1000
)

// Steps of a transfer (runtime_prepare and workspace_write).
const (
	StepBegin  = "begin"
	StepChunk  = "chunk"
	StepCommit = "commit"
)

// Actions of a runtime_prepare begin step.
const (
	PrepareSkill      = "skill"
	PreparePlugin     = "plugin"
	PrepareFile       = "file"
	PrepareInitialize = "initialize"
	PrepareFinalize   = "finalize"
)

// emptySHA256 is the digest of zero bytes: the only digest an empty body
// can declare.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// RuntimePrepare is one step of the connection's single environment
// initialization transfer. begin opens it with a typed header, each chunk
// carries the next bytes at the offset the Runtime has received so far, and
// commit applies it. Skills, plugins and files carry a body (size_bytes and
// sha256 declared at begin, bytes sent in chunks); initialize and finalize
// carry only their typed header and go straight from begin to commit.
//
// Exactly one metadata object goes with the action: skill, plugin (with an
// optional slot, absent meaning 0), file, initialization or sources. On
// chunk and commit every header member is forbidden. size_bytes is a
// pointer so that a header member is refused whenever it is present; an
// empty file may omit it (the reference omits zero), every other body
// declares it.
//
// Paths here are logical: absolute under /workspace, resolved by the
// Runtime (see CheckLogicalPath). That is a different rule from the
// workspace-relative paths of workspace_read and workspace_write.
//
// budget_ms and initialization.network appear only in some versions of the
// reference; both are optional here so that either kind of peer decodes.
type RuntimePrepare struct {
	Step           string                        `json:"step"`
	EnvironmentID  string                        `json:"environment_id,omitempty"`
	SessionID      string                        `json:"session_id,omitempty"`
	Action         string                        `json:"action,omitempty"`
	Slot           *int64                        `json:"slot,omitempty"`
	Skill          *RuntimePrepareMetadata       `json:"skill,omitempty"`
	Plugin         *RuntimePrepareMetadata       `json:"plugin,omitempty"`
	File           *RuntimePrepareFile           `json:"file,omitempty"`
	Initialization *RuntimePrepareInitialization `json:"initialization,omitempty"`
	Sources        *RuntimePrepareSources        `json:"sources,omitempty"`
	SizeBytes      *int64                        `json:"size_bytes,omitempty"`
	SHA256         string                        `json:"sha256,omitempty"`
	BudgetMS       int64                         `json:"budget_ms,omitempty"`
	Offset         int64                         `json:"offset,omitempty"`
	Data           workspaceBytes                `json:"data,omitempty"`
}

// RuntimePrepareMetadata describes a skill or plugin bundle: its type
// (only "inline" bundles exist), name and description. The Runtime checks
// them against the bundle's own manifest when it installs it.
type RuntimePrepareMetadata struct {
	Type        string `json:"type"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// RuntimePrepareFile addresses the file a file action installs.
type RuntimePrepareFile struct {
	Path string `json:"path"`
}

// RuntimePrepareInitialization is one typed initialization action:
// configure sets environment variables; npm and python install packages;
// setup runs one command, optionally in a workspace directory. Each action
// admits only its own members.
type RuntimePrepareInitialization struct {
	Action   string            `json:"action"`
	Env      map[string]string `json:"env,omitempty"`
	Network  string            `json:"network,omitempty"`
	Packages []string          `json:"packages,omitempty"`
	Command  string            `json:"command,omitempty"`
	CWD      string            `json:"cwd,omitempty"`
}

// RuntimePrepareSources is the frozen capability selection a finalize step
// installs: skill and plugin metadata in slot order, and workspace
// directories to look for more. An empty list is spelled by omitting it.
type RuntimePrepareSources struct {
	Skills      []RuntimePrepareMetadata `json:"skills,omitempty"`
	Plugins     []RuntimePrepareMetadata `json:"plugins,omitempty"`
	Directories []string                 `json:"directories,omitempty"`
}

// UnmarshalJSON decodes strictly and refuses a raw payload over
// MaxRuntimePrepareFrameBytes before looking at it.
func (p *RuntimePrepare) UnmarshalJSON(data []byte) error {
	type plain RuntimePrepare
	return workspaceUnmarshalBounded(runtimePrepareType, data, (*plain)(p))
}

// Validate checks the step; see the type's doc comment.
func (p RuntimePrepare) Validate() error {
	c := newChecker("")
	c.oneOf("step", p.Step, StepBegin, StepChunk, StepCommit)
	if !c.ok() {
		return c.err()
	}
	if p.Step != StepBegin {
		transferNoHeader(c, p.Step,
			"environment_id", p.EnvironmentID != "",
			"session_id", p.SessionID != "",
			"action", p.Action != "",
			"slot", p.Slot != nil,
			"skill", p.Skill != nil,
			"plugin", p.Plugin != nil,
			"file", p.File != nil,
			"initialization", p.Initialization != nil,
			"sources", p.Sources != nil,
			"size_bytes", p.SizeBytes != nil,
			"sha256", p.SHA256 != "",
			"budget_ms", p.BudgetMS != 0,
		)
		transferBody(c, p.Step, p.Offset, len(p.Data))
		return c.err()
	}
	c.uuid("environment_id", p.EnvironmentID)
	c.uuid("session_id", p.SessionID)
	c.oneOf("action", p.Action, PrepareSkill, PreparePlugin, PrepareFile, PrepareInitialize, PrepareFinalize)
	if !c.ok() {
		return c.err()
	}
	if p.Action == PreparePlugin {
		if p.Slot != nil {
			c.rangeInt("slot", *p.Slot, 0, MaxPluginSlot)
		}
	} else {
		c.forbidden("slot", p.Slot != nil, "only a plugin takes a slot")
	}
	metadata := func(field, action string, present bool, check func() *FieldError) {
		switch {
		case present && p.Action != action:
			c.forbidden(field, true, "action "+p.Action+" carries no "+field+" object")
		case !present && p.Action == action:
			c.fail(field, RuleRequired, "action "+action+" needs its "+field+" object")
		case present && c.ok():
			workspaceNested(c, field, check())
		}
	}
	metadata("skill", PrepareSkill, p.Skill != nil, func() *FieldError { return p.Skill.validate() })
	metadata("plugin", PreparePlugin, p.Plugin != nil, func() *FieldError { return p.Plugin.validate() })
	metadata("file", PrepareFile, p.File != nil, func() *FieldError {
		return transferRelabel(CheckLogicalPath(p.File.Path, false), "path")
	})
	metadata("initialization", PrepareInitialize, p.Initialization != nil, func() *FieldError { return p.Initialization.validate() })
	metadata("sources", PrepareFinalize, p.Sources != nil, func() *FieldError { return p.Sources.validate() })
	switch p.Action {
	case PrepareSkill, PreparePlugin:
		if p.SizeBytes == nil {
			c.fail("size_bytes", RuleRequired, "a "+p.Action+" bundle declares its size")
		} else {
			c.rangeInt("size_bytes", *p.SizeBytes, 1, MaxTransferBytes)
		}
		transferDigest(c, p.SHA256, p.SizeBytes)
	case PrepareFile:
		if p.SizeBytes != nil {
			c.rangeInt("size_bytes", *p.SizeBytes, 0, MaxTransferBytes)
		}
		transferDigest(c, p.SHA256, p.SizeBytes)
	default:
		c.forbidden("size_bytes", p.SizeBytes != nil, "action "+p.Action+" carries no body")
		c.forbidden("sha256", p.SHA256 != "", "action "+p.Action+" carries no body")
	}
	if p.BudgetMS != 0 {
		c.rangeInt("budget_ms", p.BudgetMS, 1, MaxRuntimePrepareBudgetMS)
	}
	c.forbidden("offset", p.Offset != 0, "begin starts at offset 0")
	c.forbidden("data", len(p.Data) > 0, "begin carries no data; send it in chunks")
	workspaceCheckEncodedSize(c, p, MaxRuntimePrepareFrameBytes)
	return c.err()
}

// DriveKey is the step: "begin", "chunk" or "commit" ("" for any other).
func (p RuntimePrepare) DriveKey() string { return transferStepKey(p.Step) }

func (m RuntimePrepareMetadata) validate() *FieldError {
	c := newChecker("")
	c.oneOf("type", m.Type, "inline")
	c.required("name", m.Name)
	if !utf8.ValidString(m.Name) {
		c.fail("name", RuleFormat, "not valid UTF-8")
	}
	c.required("description", m.Description)
	if !utf8.ValidString(m.Description) {
		c.fail("description", RuleFormat, "not valid UTF-8")
	}
	return c.first
}

func (in RuntimePrepareInitialization) validate() *FieldError {
	c := newChecker("")
	c.oneOf("action", in.Action, "configure", "npm", "python", "setup")
	if !c.ok() {
		return c.first
	}
	configure := in.Action == "configure"
	if configure {
		initializationCheckEnv(c, in.Env)
		c.forbidden("network", in.Network != "", "configure sets variables; it has no network access to choose")
	} else {
		c.forbidden("env", in.Env != nil, "only configure sets environment variables")
		if in.Network != "" {
			c.oneOf("network", in.Network, "enabled", "disabled")
		}
	}
	if in.Action == "npm" || in.Action == "python" {
		initializationCheckPackages(c, in.Packages)
	} else {
		c.forbidden("packages", in.Packages != nil, "only npm and python install packages")
	}
	if in.Action == "setup" {
		c.required("command", in.Command)
		if strings.ContainsRune(in.Command, 0) || !utf8.ValidString(in.Command) {
			c.fail("command", RuleFormat, "must be UTF-8 without NUL")
		}
		if in.CWD != "" {
			c.nested("cwd", CheckLogicalPath(in.CWD, true))
		}
	} else {
		c.forbidden("command", in.Command != "", "only setup runs a command")
		c.forbidden("cwd", in.CWD != "", "only setup runs in a directory")
	}
	return c.first
}

// initializationCheckEnv checks the variables of a configure action in
// name order, so the first bad one is the same on every run.
func initializationCheckEnv(c *checker, env map[string]string) {
	switch {
	case env == nil:
		return
	case len(env) == 0:
		c.fail("env", RuleRequired, "omit env instead of sending an empty object")
		return
	case len(env) > MaxInitializationItems:
		c.fail("env", RuleTooLarge, "more than "+itoa(MaxInitializationItems)+" variables")
		return
	}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		f := join("env", cutName(k))
		switch {
		case k == "":
			c.fail("env", RuleFormat, "a variable name must not be empty")
		case !utf8.ValidString(k) || strings.ContainsAny(k, "=\x00\r\n"):
			c.fail(f, RuleFormat, "a variable name is UTF-8 without =, NUL, CR or LF")
		case !utf8.ValidString(env[k]) || strings.ContainsRune(env[k], 0):
			c.fail(f, RuleFormat, "a value is UTF-8 without NUL")
		}
	}
}

func initializationCheckPackages(c *checker, pkgs []string) {
	switch {
	case len(pkgs) == 0:
		c.fail("packages", RuleRequired, "at least one package is required")
		return
	case len(pkgs) > MaxInitializationItems:
		c.fail("packages", RuleTooLarge, "more than "+itoa(MaxInitializationItems)+" packages")
		return
	}
	for i, name := range pkgs {
		f := "packages[" + itoa(i) + "]"
		switch {
		case strings.TrimSpace(name) == "":
			c.fail(f, RuleRequired, "a package name must not be blank")
		case strings.HasPrefix(name, "-"):
			c.fail(f, RuleFormat, "a package name must not start with - (it would be read as an option)")
		case !utf8.ValidString(name) || strings.ContainsAny(name, "\x00\r\n"):
			c.fail(f, RuleFormat, "a package name is UTF-8 without NUL, CR or LF")
		}
	}
}

func (s RuntimePrepareSources) validate() *FieldError {
	c := newChecker("")
	list := func(field string, n int) bool {
		switch {
		case n == 0:
			c.fail(field, RuleRequired, "omit "+field+" instead of sending an empty list")
		case n > MaxRuntimePrepareSources:
			c.fail(field, RuleTooLarge, "more than "+itoa(MaxRuntimePrepareSources)+" "+field)
		}
		return c.ok()
	}
	if s.Skills != nil && list("skills", len(s.Skills)) {
		for i, m := range s.Skills {
			workspaceNested(c, "skills["+itoa(i)+"]", m.validate())
		}
	}
	if s.Plugins != nil && list("plugins", len(s.Plugins)) {
		for i, m := range s.Plugins {
			workspaceNested(c, "plugins["+itoa(i)+"]", m.validate())
		}
	}
	if s.Directories != nil && list("directories", len(s.Directories)) {
		seen := make(map[string]bool, len(s.Directories))
		for i, d := range s.Directories {
			f := "directories[" + itoa(i) + "]"
			c.nested(f, CheckLogicalPath(d, true))
			if c.ok() && seen[d] {
				c.fail(f, RuleConflict, "repeats a directory")
			}
			seen[d] = true
		}
	}
	return c.first
}

// CheckLogicalPath validates a runtime_prepare path: the logical, absolute
// form the Runtime resolves against its own workspace. It must be clean
// (path.Clean leaves it unchanged), UTF-8, at most MaxPathBytes, free of
// backslash, NUL, CR and LF, and lie under /workspace/; /workspace itself is
// accepted only where allowRoot is set (a setup cwd, a source directory).
//
// This is deliberately not CheckWorkspacePath: workspace_read and
// workspace_write address the workspace with relative paths, runtime_prepare
// with absolute logical ones, and each rule is checked only by its own
// checker. The error is a *FieldError with an empty Field.
func CheckLogicalPath(p string, allowRoot bool) error {
	c := newChecker("")
	switch {
	case p == "":
		c.fail("", RuleRequired, "a path is required")
	case len(p) > MaxPathBytes:
		c.fail("", RuleTooLarge, "longer than "+itoa(MaxPathBytes)+" bytes")
	case !utf8.ValidString(p):
		c.fail("", RuleFormat, "not valid UTF-8")
	case strings.ContainsAny(p, "\x00\r\n\\"):
		c.fail("", RuleFormat, "contains NUL, CR, LF or a backslash")
	case path.Clean(p) != p:
		c.fail("", RuleFormat, "must be clean: no ., .., empty element or trailing slash")
	case p == "/workspace":
		if !allowRoot {
			c.fail("", RuleFormat, "must name something under /workspace/, not the workspace itself")
		}
	case !strings.HasPrefix(p, "/workspace/"):
		c.fail("", RuleFormat, "must be an absolute path under /workspace/")
	}
	return c.err()
}

// RuntimePrepareResult is the receipt of one runtime_prepare step: ready
// answers begin, received(offset = bytes staged so far) answers a chunk,
// completed(size_bytes = the declared size) answers commit once the step
// was applied. rejected, failed and unknown end the transfer with a finite
// error code; failed may carry the exit code of an initialization command.
// An unknown result keeps the transfer's ownership: its effect is
// uncertain and it is never replayed.
//
// offset and size_bytes are zero when absent, as in the reference: a ready
// or rejected receipt has offset 0, and so does a completed one.
type RuntimePrepareResult struct {
	Outcome   string `json:"outcome"`
	Offset    int64  `json:"offset,omitempty"`
	SizeBytes int64  `json:"size_bytes,omitempty"`
	ErrorCode string `json:"error_code,omitempty"`
	ExitCode  *int64 `json:"exit_code,omitempty"`
}

// Finite error codes of runtime_prepare_result, by outcome. The E3
// assignment codes are not part of the E2 wire.
var (
	runtimePrepareRejectedCodes = []string{"invalid_request", "resource_unavailable", "runtime_preparation_capacity", "runtime_preparation_unsupported", "runtime_preparation_rejected"}
	runtimePrepareFailedCodes   = []string{"runtime_preparation_failed"}
	runtimePrepareUnknownCodes  = []string{"runtime_preparation_unconfirmed"}
)

// Validate checks the receipt on its own; Answers also checks it against
// the step it answers.
func (r RuntimePrepareResult) Validate() error {
	c := newChecker("")
	c.oneOf("outcome", r.Outcome, "ready", "received", "completed", "rejected", "failed", "unknown")
	if !c.ok() {
		return c.err()
	}
	transferResultShape(c, r.Outcome, r.Offset, r.SizeBytes)
	switch r.Outcome {
	case "rejected":
		c.oneOf("error_code", r.ErrorCode, runtimePrepareRejectedCodes...)
	case "failed":
		c.oneOf("error_code", r.ErrorCode, runtimePrepareFailedCodes...)
	case "unknown":
		c.oneOf("error_code", r.ErrorCode, runtimePrepareUnknownCodes...)
	default:
		c.forbidden("error_code", r.ErrorCode != "", "a "+r.Outcome+" receipt carries no error_code")
	}
	if r.ExitCode != nil {
		c.forbidden("exit_code", r.Outcome != "failed", "only a failed receipt carries an exit code")
		c.rangeInt("exit_code", *r.ExitCode, 0, 255)
	}
	return c.err()
}

// DriveKey is the outcome: one of ready, received, completed, rejected,
// failed and unknown ("" for any other).
func (r RuntimePrepareResult) DriveKey() string {
	switch r.Outcome {
	case "ready", "received", "completed", "rejected", "failed", "unknown":
		return r.Outcome
	}
	return ""
}

// Answers validates r and checks it against the step it answers. declared
// is the size_bytes the transfer's begin declared (0 for initialize and
// finalize). A success must be the expected one: ready with offset 0 for
// begin, received with offset = the chunk's offset + its length for a chunk,
// completed with size_bytes = declared for commit. rejected and unknown may
// answer any step; failed only a commit, since only a commit applies
// anything. The error is stamped with the message type under "payload".
func (r RuntimePrepareResult) Answers(step RuntimePrepare, declared int64) *FieldError {
	if err := r.Validate(); err != nil {
		return workspaceStamp(runtimePrepareResultType, err)
	}
	return transferAnswers(runtimePrepareResultType, step.Step, step.Offset, len(step.Data), declared,
		r.Outcome, r.Offset, r.SizeBytes, r.Outcome == "failed")
}

// --- helpers shared by runtime_prepare and workspace_write

// transferStepKey is the DriveKey of a transfer step.
func transferStepKey(step string) string {
	switch step {
	case StepBegin, StepChunk, StepCommit:
		return step
	}
	return ""
}

// transferNoHeader forbids, in order, every begin-only member present on a
// chunk or commit. pairs alternates field names and presence.
func transferNoHeader(c *checker, step string, pairs ...any) {
	for i := 0; i+1 < len(pairs); i += 2 {
		name, _ := pairs[i].(string)
		present, _ := pairs[i+1].(bool)
		c.forbidden(name, present, "only begin carries "+name+", not "+step)
	}
}

// transferBody checks offset and data of a chunk or commit: a chunk carries
// 1..ChunkBytes bytes at an offset within MaxTransferBytes, a commit neither.
func transferBody(c *checker, step string, offset int64, n int) {
	if step == StepCommit {
		c.forbidden("offset", offset != 0, "commit carries offset 0")
		c.forbidden("data", n > 0, "commit carries no data")
		return
	}
	c.rangeInt("offset", offset, 0, MaxTransferBytes)
	switch {
	case n == 0:
		c.fail("data", RuleRequired, "a chunk carries at least one byte")
	case n > ChunkBytes:
		c.fail("data", RuleTooLarge, "a chunk carries at most "+itoa(ChunkBytes)+" bytes")
	case offset+int64(n) > MaxTransferBytes:
		c.fail("data", RuleTooLarge, "ends beyond the "+itoa(MaxTransferBytes)+"-byte transfer bound")
	}
}

// transferDigest checks the sha256 of a body; an empty body can declare
// only the digest of zero bytes.
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

// transferResultShape checks which receipts carry offset and size_bytes:
// only received has an offset (at least 1, as a chunk has at least a byte),
// only completed has a size; both stay within MaxTransferBytes.
func transferResultShape(c *checker, outcome string, offset, size int64) {
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
}

// transferAnswers checks an already valid receipt against the step it
// answers. failed says whether the receipt is a failed one (runtime_prepare
// only): it may answer a commit alone.
func transferAnswers(typ, step string, offset int64, n int, declared int64, outcome string, gotOffset, gotSize int64, failed bool) *FieldError {
	c := newChecker(typ)
	var want string
	switch step {
	case StepBegin:
		want = "ready"
	case StepChunk:
		want = "received"
	case StepCommit:
		want = "completed"
	default:
		c.fail("payload.outcome", RuleConflict, "answers no valid step")
		return c.first
	}
	switch {
	case outcome == "rejected" || outcome == "unknown":
	case failed:
		c.forbidden("payload.outcome", step != StepCommit, "only a commit can fail; a "+step+" is rejected or unknown")
	case outcome != want:
		c.fail("payload.outcome", RuleConflict, "a "+step+" is answered by "+want+", not "+outcome)
	case want == "received" && gotOffset != offset+int64(n):
		c.fail("payload.offset", RuleConflict, "must be the bytes received: "+itoa(int(offset+int64(n))))
	case want == "completed" && gotSize != declared:
		c.fail("payload.size_bytes", RuleConflict, "must be the declared size "+itoa(int(declared)))
	}
	return c.first
}

// transferRelabel makes a checker error from a standalone path check
// relative to field.
func transferRelabel(err error, field string) *FieldError {
	if err == nil {
		return nil
	}
	fe, ok := relabel(err, field).(*FieldError)
	if !ok {
		return fieldErr("", field, RuleFormat, cut(err.Error()))
	}
	return fe
}
