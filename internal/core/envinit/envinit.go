// Package envinit is an Environment's declared initialization: what Core
// sends the Runtime through runtime_prepare before the Environment is used
// on a connection (daemon-protocol.txt:104). The public API validates a
// declaration with it and stores it with the Environment; the gateway turns
// it into transfer steps.
package envinit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentwire/agentwire/wire"
)

// Spec is one Environment's initialization: environment variables (one
// configure step) and files installed into the workspace, in order.
//
// decision: the public declaration offers the two steps the reference
// Runtime installs without running anything on Core's behalf (configure
// and file, daemon-protocol.txt:7, 104); package installs and setup
// commands, which it refuses runtime_preparation_unsupported, are not
// offered. The bodies travel inside the public request, so they are bound
// by its 5 MiB inline limit (daemon-protocol.txt:185) well before the
// 50 MiB transfer bound.
type Spec struct {
	Env   map[string]string `json:"env,omitempty"`
	Files []File            `json:"files,omitempty"`
	// SealedEnv holds the variables' values sealed (core/vault) in a
	// stored declaration: Core keeps them out of the store in clear and
	// opens them only into the configure step. A submitted declaration
	// never carries it.
	SealedEnv map[string][]byte `json:"sealed_env,omitempty"`
}

// SecretName is the name an initialization variable's value is sealed
// under: bound to the Environment and the variable, so a stored value
// cannot be moved to another.
func SecretName(environmentID, variable string) string {
	return "env/" + environmentID + "/" + variable
}

// Seal moves every variable's value into SealedEnv, sealed by seal.
func (s Spec) Seal(seal func(name string, value []byte) ([]byte, error)) (Spec, error) {
	if len(s.Env) == 0 {
		return s, nil
	}
	out := s
	out.Env, out.SealedEnv = nil, make(map[string][]byte, len(s.Env))
	for name, v := range s.Env {
		sealed, err := seal(name, []byte(v))
		if err != nil {
			return Spec{}, err
		}
		out.SealedEnv[name] = sealed
	}
	return out, nil
}

// Open moves SealedEnv's values back into Env, opened by open.
func (s Spec) Open(open func(name string, sealed []byte) ([]byte, error)) (Spec, error) {
	if len(s.SealedEnv) == 0 {
		return s, nil
	}
	out := s
	out.Env = make(map[string]string, len(s.Env)+len(s.SealedEnv))
	for name, v := range s.Env {
		out.Env[name] = v
	}
	for name, sealed := range s.SealedEnv {
		v, err := open(name, sealed)
		if err != nil {
			return Spec{}, fmt.Errorf("initialization env %s: %w", name, err)
		}
		out.Env[name] = string(v)
	}
	out.SealedEnv = nil
	return out, nil
}

// EnvNames are the declared variables' names, sealed or not.
func (s Spec) EnvNames() []string {
	var out []string
	for k := range s.Env {
		out = append(out, k)
	}
	for k := range s.SealedEnv {
		if _, dup := s.Env[k]; !dup {
			out = append(out, k)
		}
	}
	return out
}

// File is one file installed at Path (logical, under /workspace) with
// Content (base64 in JSON).
type File struct {
	Path    string `json:"path"`
	Content []byte `json:"content"`
}

// MaxFiles bounds the files of one declaration.
const MaxFiles = 64

// FieldError names the member of the declaration at fault, relative to
// the declaration ("files[2].path").
type FieldError struct {
	Field  string
	Detail string
}

func (e *FieldError) Error() string { return "initialization." + e.Field + ": " + e.Detail }

// Parse decodes a stored or submitted declaration strictly and validates
// it. An empty or null one is the zero Spec.
func Parse(raw json.RawMessage) (Spec, error) {
	var s Spec
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return s, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		field := ""
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			field = ute.Field
		} else if m := err.Error(); strings.HasPrefix(m, "json: unknown field ") {
			field = strings.Trim(strings.TrimPrefix(m, "json: unknown field "), `"`)
		} else if strings.Contains(m, "base64") {
			field = "files"
		}
		return Spec{}, &FieldError{Field: field, Detail: bounded(err.Error())}
	}
	if err := s.Validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

func bounded(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// Empty reports whether nothing is declared.
func (s Spec) Empty() bool { return len(s.Env) == 0 && len(s.SealedEnv) == 0 && len(s.Files) == 0 }

// placeholder identities: Validate checks each step with the wire's own
// validator, whose identities the gateway fills in at send time.
const placeholderUUID = "00000000-0000-4000-8000-000000000001"

// Validate checks every step with the wire validator of runtime_prepare's
// begin, and that no two files share a path.
func (s Spec) Validate() *FieldError {
	if s.Env != nil && len(s.Env) == 0 {
		return &FieldError{Field: "env", Detail: "omit env instead of sending an empty object"}
	}
	if len(s.Files) > MaxFiles {
		return &FieldError{Field: "files", Detail: fmt.Sprintf("at most %d files", MaxFiles)}
	}
	seen := map[string]bool{}
	for _, st := range s.Steps(placeholderUUID, placeholderUUID) {
		if err := st.Begin.Validate(); err != nil {
			field, detail := st.Field, bounded(err.Error())
			var fe *wire.FieldError
			if errors.As(err, &fe) {
				detail = fe.Detail
				if st.File && strings.HasPrefix(fe.Field, "file.path") {
					field += ".path"
				}
			}
			return &FieldError{Field: field, Detail: detail}
		}
		if st.File {
			if seen[st.Name] {
				return &FieldError{Field: st.Field + ".path", Detail: "another file has the same path"}
			}
			seen[st.Name] = true
		}
	}
	return nil
}

// Step is one transfer of the initialization: its begin header and, for a
// file, its body.
type Step struct {
	// Name is "configure" or the file's path.
	Name string
	// Field is the declaration member the step comes from.
	Field string
	File  bool
	Begin wire.RuntimePrepare
	Body  []byte
}

// Steps lists the transfers in order: configure first (so a later step of
// the same connection already sees the variables), then each file as
// declared. envID and sessionID are the wire identities (canonical UUIDs).
func (s Spec) Steps(envID, sessionID string) []Step {
	var out []Step
	if len(s.Env) > 0 {
		out = append(out, Step{Name: "configure", Field: "env", Begin: wire.RuntimePrepare{
			Step: wire.StepBegin, EnvironmentID: envID, SessionID: sessionID, Action: wire.PrepareInitialize,
			Initialization: &wire.RuntimePrepareInitialization{Action: "configure", Env: s.Env},
		}})
	}
	for i, f := range s.Files {
		sum := sha256.Sum256(f.Content)
		b := wire.RuntimePrepare{Step: wire.StepBegin, EnvironmentID: envID, SessionID: sessionID, Action: wire.PrepareFile,
			File: &wire.RuntimePrepareFile{Path: f.Path}, SHA256: hex.EncodeToString(sum[:])}
		if n := int64(len(f.Content)); n > 0 {
			// The reference omits a zero size (an empty file).
			b.SizeBytes = &n
		}
		out = append(out, Step{Name: f.Path, Field: fmt.Sprintf("files[%d]", i), File: true, Begin: b, Body: f.Content})
	}
	return out
}

// SessionUUID is the wire session_id of a Core Session in runtime_prepare,
// which requires a canonical UUID.
//
// decision: Core's Session IDs are not UUIDs, so the begin step carries a
// name-based UUID (version 8, from SHA-256 of the Session ID): the same
// Session always maps to the same UUID, and a UUID-shaped Session ID is
// kept as it is (daemon-protocol.txt:71).
func SessionUUID(id string) string {
	if wire.IsCanonicalUUID(id) {
		return id
	}
	h := sha256.Sum256([]byte("agentwire session " + id))
	h[6] = h[6]&0x0f | 0x80 // version 8
	h[8] = h[8]&0x3f | 0x80 // RFC 9562 variant
	x := hex.EncodeToString(h[:16])
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}
