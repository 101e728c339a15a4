// Package exec is the Harness adapter that runs a configured local command
// once per Turn and speaks JSON lines with it: the adapter writes the Turn's
// input, active input and Core's answers on the command's stdin and reads
// the Turn's events from its stdout (docs/exec-adapter.md describes the
// lines). Any agent CLI can join the daemon this way without Go code.
//
// The command is not trusted to behave: a process that exits before done,
// stops writing, or writes a line that is not a valid event fails only its
// Turn, with an error frame and done (daemon-protocol.txt:104), never the
// daemon.
package exec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	osexec "os/exec"
	"path/filepath"
	"time"

	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// Defaults of Config.
const (
	DefaultGrace       = 5 * time.Second
	DefaultIdleTimeout = 10 * time.Minute
	DefaultStderrBytes = 64 << 10
	// MaxCapabilityFileBytes bounds the capabilities file.
	MaxCapabilityFileBytes = 64 << 10
)

// Config configures one exec adapter (one agent kind).
type Config struct {
	// Kind is the agent kind the adapter declares.
	Kind string
	// Command is the program to run per Turn; Args follow it.
	Command string
	Args    []string
	// Dir is the working directory of the command for a configuration of
	// Environment none ("" = the daemon's); a configuration bound to an
	// Environment runs in that Environment's workspace instead
	// (harness.ExecutorConfig.WorkspaceDir).
	Dir string
	// CapabilityFile is the declaration file; "" means Command +
	// ".capabilities.json", next to the command.
	CapabilityFile string
	// Grace is each step of ending a process: after done or a
	// cancellation it gets Grace to exit once its input is closed, then
	// SIGTERM and another Grace before SIGKILL; a Turn the adapter fails
	// (a hang, garbage) gets SIGTERM at once. 5 s by default.
	Grace time.Duration
	// Clock times those graces (peer.SystemClock when nil); tests inject
	// a manual one.
	Clock harness.Clock
	// IdleTimeout fails a Turn whose process writes nothing for this long
	// while no question of it waits for Core's answer.
	IdleTimeout time.Duration
	// StderrBytes bounds the stderr kept for the log, per Turn.
	StderrBytes int
	Logger      *slog.Logger
}

// CapabilityFile is the format of the declaration file: every capability
// decided (true or false, no defaults) and an optional Harness version.
type CapabilityFile struct {
	Version      string                     `json:"version,omitempty"`
	Capabilities wire.AgentKindCapabilities `json:"capabilities"`
}

// Adapter runs Config.Command per Turn.
type Adapter struct {
	cfg  Config
	decl harness.Declaration
}

// New reads and validates the declaration whole (daemon-protocol.txt:23)
// and returns the adapter; a missing, unreadable or incomplete
// capabilities file is an error naming the file.
func New(cfg Config) (*Adapter, error) {
	if cfg.Kind == "" || cfg.Command == "" {
		return nil, errors.New("exec adapter: kind and command are required")
	}
	if cfg.CapabilityFile == "" {
		cfg.CapabilityFile = cfg.Command + ".capabilities.json"
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Clock == nil {
		cfg.Clock = peer.SystemClock()
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.StderrBytes <= 0 {
		cfg.StderrBytes = DefaultStderrBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cf, err := ReadCapabilityFile(cfg.CapabilityFile)
	if err != nil {
		return nil, err
	}
	_, lookErr := osexec.LookPath(cfg.Command)
	decl := harness.Declaration{Kind: cfg.Kind, Available: lookErr == nil, Version: cf.Version, Capabilities: cf.Capabilities}
	if err := decl.Validate(); err != nil {
		return nil, fmt.Errorf("exec adapter: %s: %w", cfg.CapabilityFile, err)
	}
	if lookErr != nil {
		cfg.Logger.Warn("exec adapter: command not runnable; declared unavailable", "kind", cfg.Kind, "command", cfg.Command, "err", lookErr)
	}
	return &Adapter{cfg: cfg, decl: decl}, nil
}

// ReadCapabilityFile reads a declaration file strictly: unknown members and
// an undecided capability are errors.
func ReadCapabilityFile(path string) (CapabilityFile, error) {
	var cf CapabilityFile
	f, err := os.Open(path)
	if err != nil {
		return cf, fmt.Errorf("exec adapter: capabilities file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxCapabilityFileBytes+1))
	if err != nil {
		return cf, fmt.Errorf("exec adapter: capabilities file %s: %w", filepath.Base(path), err)
	}
	if len(data) > MaxCapabilityFileBytes {
		return cf, fmt.Errorf("exec adapter: capabilities file %s is larger than %d bytes", path, MaxCapabilityFileBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cf); err != nil {
		return cf, fmt.Errorf("exec adapter: capabilities file %s: %w", path, err)
	}
	if dec.More() {
		return cf, fmt.Errorf("exec adapter: capabilities file %s: trailing data after the object", path)
	}
	if err := cf.Capabilities.Validate(); err != nil {
		return cf, fmt.Errorf("exec adapter: capabilities file %s: %w", path, err)
	}
	return cf, nil
}

// Declaration is the declaration read at New.
func (a *Adapter) Declaration() harness.Declaration { return a.decl }

// NewExecutor prepares nothing natively: the process starts with each Turn.
func (a *Adapter) NewExecutor(_ context.Context, cfg harness.ExecutorConfig) (harness.Executor, error) {
	if !a.decl.Available {
		return nil, fmt.Errorf("exec adapter: %s is not runnable", a.cfg.Command)
	}
	// An operation the declaration does not support is refused before any
	// process starts (daemon-protocol.txt:27).
	if err := harness.CheckConfiguration(cfg.Declaration.Capabilities, cfg.Configuration); err != nil {
		return nil, err
	}
	dir := a.cfg.Dir
	if cfg.WorkspaceDir != "" {
		// decision: the Harness runs in the workspace of the Environment
		// its Session is bound to (daemon-protocol.txt:59: the request
		// carries no working directory; the Runtime's binding decides).
		dir = cfg.WorkspaceDir
	}
	c := cfg.Configuration
	return &executor{cfg: a.cfg, dir: dir, sessionID: cfg.SessionID,
		options: options{AgentSessionID: c.AgentSessionID, StrictResume: c.StrictResume, RequireExisting: c.RequireExistingNativeSession,
			ObserveToolObservations: c.ObserveToolObservations}}, nil
}
