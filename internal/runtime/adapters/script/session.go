package script

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/agentwire/agentwire/runtime/harness"
)

// The native Sessions of the script adapter. A script's native Session
// keeps no history: each Turn plays the script. What it has is an
// identity: Script.SessionID, which done reports, and which a later
// configuration resumes (agent_session_id) or recovers
// (require_existing_native_session).

// Errors of strict resume and recovery: the configuration names a native
// Session that does not exist, so the preparation fails rather than start
// a new native root (daemon-protocol.txt:60, :165).
var (
	ErrUnknownSession = errors.New("script: strict resume of a native Session this adapter never reported")
	ErrNoSession      = errors.New("script: require_existing_native_session names no Session to recover (no agent_state_key, no Session ID)")
	ErrNotStarted     = errors.New("script: require_existing_native_session names a Session that never ran a Turn on this adapter")
)

// sessions are the native Session identities the adapter reported.
type sessions struct {
	mu    sync.Mutex
	known map[string]bool
	// started maps a Session's recovery key (its agent_state_key, else its
	// Session ID) to the native Session its last Turn ran in ("" when the
	// script reports none): the Sessions that exist natively.
	started map[string]string
}

// recoveryKey is what names cfg's Session natively.
func recoveryKey(cfg harness.ExecutorConfig) string {
	if k := cfg.Configuration.AgentStateKey; k != "" {
		return k
	}
	return cfg.SessionID
}

// ran records that the Session of key ran a Turn in native, in file too
// when the script names one (Script.SessionsFile), so that a restarted
// process still knows it.
func (s *sessions) ran(file, key, native string) error {
	if key == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(file); err != nil {
		return err
	}
	if old, ok := s.started[key]; ok && old == native {
		return nil
	}
	s.started[key] = native
	if file == "" {
		return nil
	}
	b, err := json.Marshal(s.started)
	if err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("script: record the native Session: %w", err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return fmt.Errorf("script: record the native Session: %w", err)
	}
	return nil
}

// load merges what file recorded (a missing file records nothing).
func (s *sessions) load(file string) error {
	if s.started == nil {
		s.started = map[string]string{}
	}
	if file == "" {
		return nil
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("script: read the native Sessions: %w", err)
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("script: read the native Sessions: %s: %w", file, err)
	}
	for k, v := range m {
		s.started[k] = v
	}
	return nil
}

func (s *sessions) startedAs(file, key string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(file); err != nil {
		return "", false, err
	}
	native, ok := s.started[key]
	return native, ok, nil
}

func (s *sessions) reported(id string) {
	if id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.known == nil {
		s.known = map[string]bool{}
	}
	s.known[id] = true
}

func (s *sessions) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.known[id]
}

// open returns the native Session an Executor of cfg continues: the one
// agent_session_id resumes, the script's own on recovery, or "" (the
// script's own, if any, is reported as usual).
func (s *sessions) open(sc Script, cfg harness.ExecutorConfig) (string, error) {
	c := cfg.Configuration
	switch {
	case c.AgentSessionID != "":
		if c.AgentSessionID == sc.SessionID || s.has(c.AgentSessionID) {
			return c.AgentSessionID, nil
		}
		if c.StrictResume {
			return "", ErrUnknownSession
		}
		// decision: a resume that is not strict may start a new native
		// Session (daemon-protocol.txt:60 makes Core's always strict).
		return "", nil
	case c.RequireExistingNativeSession:
		// decision: a native Session is recovered from the Session's own
		// state key (agent_state_key, or the Session ID of an
		// execution_prepare), and only if that Session ran a Turn on this
		// adapter; otherwise the configuration is refused rather than a new
		// native root started (daemon-protocol.txt:60,
		// wire.PromptRequest.RequireExistingNativeSession).
		key := recoveryKey(cfg)
		if key == "" {
			return "", ErrNoSession
		}
		native, ok, err := s.startedAs(sc.SessionsFile, key)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", ErrNotStarted
		}
		if native == "" {
			native = sc.SessionID
		}
		return native, nil
	}
	return "", nil
}
