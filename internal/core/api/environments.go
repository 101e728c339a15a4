package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"time"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/envinit"
)

// Environments: what a Session's Environment declares for initialization,
// the last initialization outcome Core saw for it (with the transfer's
// finite code), and its suspension attempts, started and resumed here
// (daemon-protocol.txt:78, 96, 104).

// SuspendFunc starts a suspension attempt of an Environment on the device
// that hosts it; ResumeFunc resumes (or rolls back) its unsettled attempt.
// With wait they wait a bounded time for the Runtime's answer. Both return
// the attempt as stored; their errors are the Err* values below or
// *SuspensionError.
type (
	SuspendFunc func(ctx context.Context, environmentID string, wait bool) (store.Suspension, error)
	ResumeFunc  func(ctx context.Context, environmentID string, rollback, wait bool) (store.Suspension, error)
)

// Errors a SuspendFunc or ResumeFunc returns.
var (
	ErrSuspensionOpen = errors.New("api: the Environment has an unsettled suspension attempt")
	// ErrSuspensionExpired: the unsettled attempt is one that expired
	// unanswered; it is answered as ErrSuspensionOpen, with a detail that
	// says why it still stands and how to settle it.
	ErrSuspensionExpired = errors.New("api: the Environment's suspension attempt expired unanswered and is not settled")
	ErrNotSuspended      = errors.New("api: the Environment has no unsettled suspension attempt")
	ErrDeviceOffline     = errors.New("api: the device is not connected")
	ErrNoWorkspace       = errors.New("api: the Environment has no bound workspace")
)

// SuspensionError is a request refused before it reached the Runtime.
type SuspensionError struct{ Detail string }

func (e *SuspensionError) Error() string { return "api: suspension: " + e.Detail }

// EnvironmentView is the API's view of an Environment.
type EnvironmentView struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	// DeviceID hosts a registered local Environment's workspace.
	DeviceID       string                `json:"device_id,omitempty"`
	Binding        json.RawMessage       `json:"binding,omitempty"`
	Initialization *InitializationView   `json:"initialization,omitempty"`
	Status         *InitializationStatus `json:"initialization_status,omitempty"`
	Suspension     *SuspensionView       `json:"suspension,omitempty"`
	CreatedAt      time.Time             `json:"created_at"`
}

// InitializationView lists what is declared without the file contents.
type InitializationView struct {
	EnvKeys []string   `json:"env_keys,omitempty"`
	Files   []FileView `json:"files,omitempty"`
}

// FileView is one declared file.
type FileView struct {
	Path      string `json:"path"`
	SizeBytes int    `json:"size_bytes"`
	SHA256    string `json:"sha256"`
}

// InitializationStatus is the last initialization outcome Core saw.
type InitializationStatus struct {
	Outcome    string    `json:"outcome"`
	Step       string    `json:"step,omitempty"`
	ErrorCode  string    `json:"error_code,omitempty"`
	ExitCode   *int      `json:"exit_code,omitempty"`
	DeviceID   string    `json:"device_id"`
	OwnerEpoch uint64    `json:"owner_epoch"`
	At         time.Time `json:"at"`
}

// SuspensionView is one suspension attempt.
type SuspensionView struct {
	SuspendID string    `json:"suspend_id"`
	DeviceID  string    `json:"device_id"`
	State     string    `json:"state"`
	Settled   bool      `json:"settled"`
	ErrorCode string    `json:"error_code,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func suspensionView(s store.Suspension) *SuspensionView {
	return &SuspensionView{SuspendID: s.ID, DeviceID: s.DeviceID, State: s.State, Settled: s.Settled, ErrorCode: s.ErrorCode, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

// checkInitialization validates a submitted declaration and returns it
// compacted for storage; false after it wrote the 400.
func checkInitialization(w http.ResponseWriter, field string, raw json.RawMessage, local bool) (json.RawMessage, bool) {
	if raw == nil || string(raw) == "null" {
		return nil, true
	}
	spec, err := envinit.Parse(raw)
	var fe *envinit.FieldError
	if errors.As(err, &fe) {
		if fe.Field != "" {
			field += "." + fe.Field
		}
		badField(w, field, fe.Detail)
		return nil, false
	}
	if err != nil {
		badField(w, field, boundedText(err.Error()))
		return nil, false
	}
	if spec.SealedEnv != nil {
		badField(w, field+".sealed_env", "unknown member: give the variables in env")
		return nil, false
	}
	if !local && !spec.Empty() {
		// decision: initialization installs into the bound workspace
		// (daemon-protocol.txt:104), so only a local Environment with a
		// binding takes one.
		badField(w, field, "only a registered openai_hosted or self_hosted Environment is initialized (POST /api/v1/environments)")
		return nil, false
	}
	if spec.Empty() {
		return nil, true
	}
	out, err := json.Marshal(spec)
	if err != nil {
		badField(w, field, boundedText(err.Error()))
		return nil, false
	}
	return out, true
}

// environment loads an Environment the caller may see.
func (a *API) environment(w http.ResponseWriter, r *http.Request) (store.Environment, bool) {
	env, err := a.cfg.Store.GetEnvironment(r.Context(), r.PathValue("environment_id"))
	if errors.Is(err, store.ErrNotFound) || (err == nil && !visible(r, env.Project)) {
		notFound(w, "environment")
		return env, false
	}
	if err != nil {
		a.internal(w, "get environment", err)
		return env, false
	}
	return env, true
}

// environmentView is what a registration, a listing and a GET show of an
// Environment: its identity, device and declared initialization (never the
// file contents).
func (a *API) environmentView(env store.Environment) EnvironmentView {
	v := EnvironmentView{ID: env.ID, Type: env.Type, DeviceID: env.DeviceID, Binding: env.Binding, CreatedAt: env.CreatedAt}
	if spec, err := envinit.Parse(env.Initialization); err == nil && !spec.Empty() {
		iv := &InitializationView{}
		iv.EnvKeys = append(iv.EnvKeys, spec.EnvNames()...)
		sort.Strings(iv.EnvKeys)
		for _, f := range spec.Files {
			sum := sha256.Sum256(f.Content)
			iv.Files = append(iv.Files, FileView{Path: f.Path, SizeBytes: len(f.Content), SHA256: hex.EncodeToString(sum[:])})
		}
		v.Initialization = iv
	}
	return v
}

func (a *API) getEnvironment(w http.ResponseWriter, r *http.Request) {
	env, ok := a.environment(w, r)
	if !ok {
		return
	}
	v := a.environmentView(env)
	st, err := a.cfg.Store.GetInitialization(r.Context(), env.ID)
	switch {
	case err == nil:
		v.Status = &InitializationStatus{Outcome: st.Outcome, Step: st.Step, ErrorCode: st.ErrorCode, DeviceID: st.DeviceID, OwnerEpoch: st.OwnerEpoch, At: st.At}
		if st.ExitCode >= 0 {
			code := st.ExitCode
			v.Status.ExitCode = &code
		}
	case !errors.Is(err, store.ErrNotFound):
		a.internal(w, "get initialization", err)
		return
	}
	s, err := a.cfg.Store.LatestSuspension(r.Context(), env.ID)
	switch {
	case err == nil:
		v.Suspension = suspensionView(s)
	case !errors.Is(err, store.ErrNotFound):
		a.internal(w, "get suspension", err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// SuspendRequest and ResumeRequest are the bodies of suspend and resume;
// both may be empty.
//
// decision: a suspend names no device: the attempt goes to the device that
// hosts the Environment (GET /api/v1/environments/{id} shows it), and a
// caller never chooses another (daemon-protocol.txt:19). A body that still
// sends device_id is refused by the strict decoder, naming the field.
type SuspendRequest struct {
	Wait *bool `json:"wait,omitempty"`
}

type ResumeRequest struct {
	Rollback bool  `json:"rollback,omitempty"`
	Wait     *bool `json:"wait,omitempty"`
}

// waitFor reads the body's wait member: the call waits for the Runtime's
// answer (up to 10 s) unless it is false, when it returns the attempt as
// soon as the request was sent (its state is then still quiescing or
// resuming; GET the Environment for the answer).
func waitFor(w *bool) bool { return w == nil || *w }

// optionalBody decodes a JSON body if there is one.
func optionalBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.ContentLength == 0 {
		return true
	}
	return decode(w, r, v)
}

func (a *API) suspendEnvironment(w http.ResponseWriter, r *http.Request) {
	env, ok := a.environment(w, r)
	if !ok {
		return
	}
	var req SuspendRequest
	if !optionalBody(w, r, &req) {
		return
	}
	if a.cfg.Suspend == nil {
		writeJSON(w, http.StatusNotImplemented, Error{Error: "not_implemented"})
		return
	}
	s, err := a.cfg.Suspend(r.Context(), env.ID, waitFor(req.Wait))
	a.suspensionAnswer(w, s, err)
}

func (a *API) resumeEnvironment(w http.ResponseWriter, r *http.Request) {
	env, ok := a.environment(w, r)
	if !ok {
		return
	}
	var req ResumeRequest
	if !optionalBody(w, r, &req) {
		return
	}
	if a.cfg.Resume == nil {
		writeJSON(w, http.StatusNotImplemented, Error{Error: "not_implemented"})
		return
	}
	s, err := a.cfg.Resume(r.Context(), env.ID, req.Rollback, waitFor(req.Wait))
	a.suspensionAnswer(w, s, err)
}

// suspensionAnswer writes the attempt as stored: its state says whether the
// Runtime answered (quiescing or resuming while it has not), and a refusal
// keeps its finite code.
func (a *API) suspensionAnswer(w http.ResponseWriter, s store.Suspension, err error) {
	var se *SuspensionError
	switch {
	case err == nil:
	case errors.Is(err, ErrSuspensionExpired):
		writeJSON(w, http.StatusConflict, Error{Error: "suspension_open", Detail: "the Environment's last suspension attempt expired unanswered (answer_timeout) and stays open: the Runtime may still hold its fence, so no new attempt starts until it settles; roll it back again (resume with rollback true) or let the Runtime's late answer settle it (docs/tenancy.md)"})
		return
	case errors.Is(err, ErrSuspensionOpen):
		writeJSON(w, http.StatusConflict, Error{Error: "suspension_open", Detail: "the Environment has an unsettled suspension attempt; resume it first"})
		return
	case errors.Is(err, ErrNotSuspended):
		writeJSON(w, http.StatusConflict, Error{Error: "not_suspended", Detail: "the Environment has no unsettled suspension attempt"})
		return
	case errors.Is(err, ErrNoWorkspace):
		writeJSON(w, http.StatusConflict, Error{Error: "no_workspace", Detail: "the Environment has no bound workspace to suspend"})
		return
	case errors.Is(err, ErrDeviceOffline):
		writeJSON(w, http.StatusServiceUnavailable, Error{Error: "device_offline", Detail: "the device that hosts the Environment is not connected"})
		return
	case errors.As(err, &se):
		writeJSON(w, http.StatusConflict, Error{Error: "suspension_refused", Detail: boundedText(se.Detail)})
		return
	default:
		a.internal(w, "suspension", err)
		return
	}
	writeJSON(w, http.StatusOK, suspensionView(s))
}
