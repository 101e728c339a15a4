package wire

import (
	"sort"
	"strconv"
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

// Actions of a runtime_prepare begin step.
const (
	PrepareSkill      = "skill"
	PreparePlugin     = "plugin"
	PrepareFile       = "file"
	PrepareInitialize = "initialize"
	PrepareFinalize   = "finalize"
)

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
	Data           base64Data                    `json:"data,omitempty"`
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
	if len(data) <= MaxRuntimePrepareFrameBytes {
		if off, d, ok := decodeChunkStep(data); ok { // chunk_decode.go
			*p = RuntimePrepare{Step: StepChunk, Offset: off, Data: d}
			return nil
		}
	}
	return decodeBounded(TypeRuntimePrepare, data, (*plain)(p))
}

// Validate checks the step; see the type's doc comment. A begin's header is
// also bounded by the encoded size of the whole frame.
func (p RuntimePrepare) Validate() error {
	c := newChecker("")
	p.transfer().validate(c, func() { p.validateBegin(c) })
	if p.Step == StepBegin {
		c.encodedSize(p, MaxRuntimePrepareFrameBytes)
	}
	return c.err()
}

// transfer is the step as a transfer: the shared members, and the
// begin-only members of runtime_prepare in field order.
func (p RuntimePrepare) transfer() transferStep {
	return transferStep{
		step: p.Step, environmentID: p.EnvironmentID, sessionID: p.SessionID,
		header: []transferMember{
			{"action", p.Action != ""},
			{"slot", p.Slot != nil},
			{"skill", p.Skill != nil},
			{"plugin", p.Plugin != nil},
			{"file", p.File != nil},
			{"initialization", p.Initialization != nil},
			{"sources", p.Sources != nil},
			{"size_bytes", p.SizeBytes != nil},
			{"sha256", p.SHA256 != ""},
			{"budget_ms", p.BudgetMS != 0},
		},
		offset: p.Offset, data: len(p.Data),
	}
}

// validateBegin checks a begin's own header: the action, its one metadata
// object, and the body it declares.
func (p RuntimePrepare) validateBegin(c *checker) {
	c.oneOf("action", p.Action, PrepareSkill, PreparePlugin, PrepareFile, PrepareInitialize, PrepareFinalize)
	if !c.ok() {
		return
	}
	if p.Action == PreparePlugin {
		if p.Slot != nil {
			c.rangeInt("slot", *p.Slot, 0, MaxPluginSlot)
		}
	} else {
		c.forbidden("slot", p.Slot != nil, "only a plugin takes a slot")
	}
	// Each action carries exactly its own metadata object. check runs only
	// for a present object, and only while no rule has failed yet.
	metadata := func(field, action string, present bool, check func() error) {
		switch {
		case present && p.Action != action:
			c.forbidden(field, true, "action "+p.Action+" carries no "+field+" object")
		case !present && p.Action == action:
			c.fail(field, RuleRequired, "action "+action+" needs its "+field+" object")
		case present && c.ok():
			c.nested(field, check())
		}
	}
	metadata("skill", PrepareSkill, p.Skill != nil, func() error { return p.Skill.validate() })
	metadata("plugin", PreparePlugin, p.Plugin != nil, func() error { return p.Plugin.validate() })
	metadata("file", PrepareFile, p.File != nil, func() error { return relabel(CheckLogicalPath(p.File.Path, false), "path") })
	metadata("initialization", PrepareInitialize, p.Initialization != nil, func() error { return p.Initialization.validate() })
	metadata("sources", PrepareFinalize, p.Sources != nil, func() error { return p.Sources.validate() })
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
}

// DriveKey is the step: "begin", "chunk" or "commit" ("" for any other).
func (p RuntimePrepare) DriveKey() string { return driveKeyIn(p.Step, transferSteps) }

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
	if env == nil || !prepareListSize(c, "env", len(env), MaxInitializationItems, "omit env instead of sending an empty object", "variables") {
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
	if !prepareListSize(c, "packages", len(pkgs), MaxInitializationItems, "at least one package is required", "packages") {
		return
	}
	for i, name := range pkgs {
		f := "packages[" + strconv.Itoa(i) + "]"
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

// prepareListSize checks that a list or map member, when sent, holds 1..max
// items: runtime_prepare spells "none" by omitting a member, never by
// sending it empty. ifEmpty is the message for an empty one, items names
// what is counted. It reports whether no rule has failed.
func prepareListSize(c *checker, field string, n, max int, ifEmpty, items string) bool {
	switch {
	case n == 0:
		c.fail(field, RuleRequired, ifEmpty)
	case n > max:
		c.fail(field, RuleTooLarge, "more than "+strconv.Itoa(max)+" "+items)
	}
	return c.ok()
}

func (s RuntimePrepareSources) validate() *FieldError {
	c := newChecker("")
	list := func(field string, n int) bool {
		return prepareListSize(c, field, n, MaxRuntimePrepareSources, "omit "+field+" instead of sending an empty list", field)
	}
	if s.Skills != nil && list("skills", len(s.Skills)) {
		for i, m := range s.Skills {
			c.nested("skills["+strconv.Itoa(i)+"]", m.validate())
		}
	}
	if s.Plugins != nil && list("plugins", len(s.Plugins)) {
		for i, m := range s.Plugins {
			c.nested("plugins["+strconv.Itoa(i)+"]", m.validate())
		}
	}
	if s.Directories != nil && list("directories", len(s.Directories)) {
		seen := make(map[string]bool, len(s.Directories))
		for i, d := range s.Directories {
			f := "directories[" + strconv.Itoa(i) + "]"
			c.nested(f, CheckLogicalPath(d, true))
			if c.ok() && seen[d] {
				c.fail(f, RuleConflict, "repeats a directory")
			}
			seen[d] = true
		}
	}
	return c.first
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

// runtimePrepareReceipts are the outcomes of runtime_prepare_result and
// the finite error codes of each refusal. The E3 assignment codes are not
// part of the E2 wire.
var runtimePrepareReceipts = transferReceipts{
	outcomes: []string{"ready", "received", "completed", "rejected", "failed", "unknown"},
	codes: outcomeCodes{
		"rejected": {"invalid_request", "resource_unavailable", "runtime_preparation_capacity", "runtime_preparation_unsupported", "runtime_preparation_rejected"},
		"failed":   {"runtime_preparation_failed"},
		"unknown":  {"runtime_preparation_unconfirmed"},
	},
}

// Validate checks the receipt on its own; Answers also checks it against
// the step it answers.
func (r RuntimePrepareResult) Validate() error {
	c := newChecker("")
	if !runtimePrepareReceipts.validate(c, r.Outcome, r.Offset, r.SizeBytes, r.ErrorCode) {
		return c.err()
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
	return driveKeyIn(r.Outcome, runtimePrepareReceipts.outcomes)
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
		return payloadError(TypeRuntimePrepareResult, err)
	}
	return step.transfer().answeredBy(TypeRuntimePrepareResult, declared, r.Outcome, r.Offset, r.SizeBytes)
}
