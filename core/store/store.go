// Package store is Core's durable state behind two interfaces: Store holds
// the protocol's state (Sessions, Environments, Turns with their ordered
// inputs and input cursor, each Turn's event journal, interaction records,
// workspace-write reservations, device owner epochs), Credentials the
// hashes of the secrets Core issued. An embedder implements either or both
// and proves them with storetest.Run and storetest.RunCredentials.
//
// Every decision that must happen exactly once (taking a device's owner
// lease, claiming a Turn, advancing the input cursor, answering an
// interaction, reserving a workspace write, revoking a credential) is one
// conditional write: the implementation never reads a row, decides in Go
// and writes it back. A lost race is reported as ErrStale (or ErrConflict
// for an insert), never silently absorbed, so several Core replicas can
// later share one database.
//
// Implementations: store/sqlite (the default, embedded) and store/memory.
// store/storetest holds the conformance suite both pass.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/turn"
)

var (
	// ErrNotFound: no record with that identity.
	ErrNotFound = errors.New("store: not found")
	// ErrConflict: an insert collided with an existing record (same ID,
	// or a unique reservation already held).
	ErrConflict = errors.New("store: conflict")
	// ErrStale: a conditional write found the record no longer in the
	// state the caller expected (another writer won, the epoch moved on).
	ErrStale = errors.New("store: stale")
	// ErrInvalid: the arguments break a rule of the interface itself
	// (a non-terminal state given to FinishTurn, say).
	ErrInvalid = errors.New("store: invalid argument")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store: closed")
)

// Store is the whole durable state of one Core. Times are supplied by the
// caller (Core's clock), never read by the store, so tests control them;
// they are kept to the millisecond, in UTC.
type Store interface {
	CreateEnvironment(ctx context.Context, e Environment) error
	GetEnvironment(ctx context.Context, id string) (Environment, error)
	// ListEnvironments lists a project's Environments ("" lists every
	// project's), oldest first.
	ListEnvironments(ctx context.Context, project string) ([]Environment, error)
	CreateSession(ctx context.Context, s Session) error
	GetSession(ctx context.Context, id string) (Session, error)
	// RecordNativeSession records the native Session ID a Run of the
	// Session ended with (done's or a cancellation receipt's metadata);
	// recording the same ID again is a no-op, and ErrStale reports that a
	// different one is recorded already.
	RecordNativeSession(ctx context.Context, sessionID, nativeID string) error

	// CreateTurn stores a queued Turn with its initial input.
	CreateTurn(ctx context.Context, t Turn) error
	GetTurn(ctx context.Context, id string) (Turn, error)
	// DueTurns lists queued Turns whose NotBefore has passed, oldest first,
	// at most one per Session: its oldest queued Turn, and only when that
	// one is due (a Session's Turns run in order, so a later one is never
	// a candidate before it, and one Session's backlog cannot fill the
	// list). With after set to the ID of a Turn of an earlier page, only
	// the Turns that come after it in that order are listed, so a reader
	// pages through every Session's head (the Turn need not be queued
	// any more).
	DueTurns(ctx context.Context, now time.Time, after string, limit int) ([]Turn, error)
	// MoveTurn applies one move of the Turn's machine (spec/turn.yaml) as
	// a conditional write: ErrStale when the Turn is not in m.From (or is
	// claimed under another Run, or a claim finds it not yet due, or
	// another Turn of its Session claimed and not finished: a Session's
	// Turns run one at a time, whichever replica claims them),
	// ErrInvalid when the turn table has no rule from m.From to m.To.
	MoveTurn(ctx context.Context, m TurnMove) error
	// ActiveTurns lists the Turns a worker claimed that have not finished
	// (claimed, cancelling, starting or running).
	ActiveTurns(ctx context.Context) ([]Turn, error)
	// SessionTurns returns the Session's newest Turns, at most limit of
	// them (limit > 0), oldest first.
	SessionTurns(ctx context.Context, sessionID string, limit int) ([]Turn, error)

	// AppendInput stores an active input after the Turn's last one and
	// returns it with its sequence number (1, 2, ...).
	AppendInput(ctx context.Context, in Input) (Input, error)
	// Inputs lists a Turn's inputs with Seq > after, in order.
	Inputs(ctx context.Context, turnID string, after int64) ([]Input, error)
	// AdvanceInputCursor moves the Turn's cursor from `from` to `to`;
	// ErrStale when the cursor is not at `from` (daemon-protocol.txt:133:
	// only an accepted receipt advances it).
	AdvanceInputCursor(ctx context.Context, turnID string, from, to int64) error

	// AppendEvent adds an event to the Turn's journal and returns it with
	// its sequence number (1, 2, ...), the SSE event ID.
	AppendEvent(ctx context.Context, e Event) (Event, error)
	// Commit writes a batch in one atomic write (one commit): its Turn
	// claims as ClaimTurn does, its Turn starts as StartTurn does, its events appended as AppendEvent does
	// (of any Turns; one Turn's in the order given), then its Turn
	// finishes as FinishTurn does. It returns the events with their
	// sequence numbers and each claim's, start's and finish's own result (nil,
	// ErrStale, ErrNotFound, ErrInvalid): one that does not apply fails
	// alone. An event whose Turn does not exist is not stored
	// (its Seq stays 0) and the error wraps ErrNotFound naming the Turn;
	// the rest is committed. Core's connections group-commit what their
	// hooks wrote in one loop turn with it.
	Commit(ctx context.Context, b Batch) (BatchResult, error)
	// Events reads a Turn's journal after a sequence number, in order;
	// limit <= 0 means all.
	Events(ctx context.Context, turnID string, after int64, limit int) ([]Event, error)
	// EventSizes lists the sequence numbers and payload sizes of the
	// Turn's events after `after`, at most limit, in order, without their
	// payloads: a reader sizes what it would hold before it reads it.
	EventSizes(ctx context.Context, turnID string, after int64, limit int) ([]EventSize, error)
	// LastEvent is the Turn's newest journal event of type typ;
	// ErrNotFound when it has none.
	LastEvent(ctx context.Context, turnID, typ string) (Event, error)

	CreateInteraction(ctx context.Context, i Interaction) error
	GetInteraction(ctx context.Context, id string) (Interaction, error)
	// FunctionCall finds the Turn's function call with callID (the newest,
	// should a Turn's Runs repeat one); ErrNotFound when there is none.
	FunctionCall(ctx context.Context, turnID, callID string) (Interaction, error)
	// TransitionInteraction moves an interaction from one state to
	// another, optionally recording the answer; ErrStale otherwise.
	TransitionInteraction(ctx context.Context, id string, from, to InteractionState, answer json.RawMessage, at time.Time) error

	// ReserveWorkspaceWrite durably reserves a write for its Session in
	// w.State, a state of the workspace_write machine (ErrInvalid
	// otherwise); ErrConflict while another write of the Session is
	// unsettled (daemon-protocol.txt:185).
	ReserveWorkspaceWrite(ctx context.Context, w WorkspaceWrite) error
	// SettleWorkspaceWrite records the exact receipt of a reserved write.
	SettleWorkspaceWrite(ctx context.Context, mutationID, outcome string, at time.Time) error
	GetWorkspaceWrite(ctx context.Context, mutationID string) (WorkspaceWrite, error)
	// TransitionWorkspaceWrite, ResolveWorkspaceWrite, OpenWorkspaceWrites
	// and UnsettledWorkspaceWrite: workspace_write.go.
	WorkspaceWrites

	// AcquireOwner takes the owner lease of a device for a new
	// connection and returns the new owner epoch, strictly greater than
	// every earlier one for that device (daemon-protocol.txt:19); the
	// lease has no replica and no expiry (AcquireLease has).
	AcquireOwner(ctx context.Context, deviceID string, at time.Time) (uint64, error)
	// ReleaseOwner ends the epoch's lease and marks the device offline if
	// epoch still owns it.
	ReleaseOwner(ctx context.Context, deviceID string, epoch uint64, at time.Time) error
	// RecordDeclaration stores a heartbeat's validated declaration (nil
	// clears it) if epoch still owns the device; ErrStale otherwise.
	RecordDeclaration(ctx context.Context, deviceID string, epoch uint64, decl json.RawMessage, at time.Time) error
	GetDevice(ctx context.Context, deviceID string) (Device, error)
	ListDevices(ctx context.Context) ([]Device, error)
	// AssignDevice gives a device to a project, creating its record
	// (offline, epoch 0) when it has none. Assigning the project it has is
	// a no-op; ErrConflict when it belongs to another project (one
	// conditional write: a device never changes hands silently).
	AssignDevice(ctx context.Context, deviceID, project string, at time.Time) error

	// CreateSuspension stores a new suspension attempt in s.State, a state
	// of the suspension machine (ErrInvalid otherwise); ErrConflict when
	// its ID exists or its Environment already has an unsettled attempt
	// (one conditional insert).
	CreateSuspension(ctx context.Context, s Suspension) error
	GetSuspension(ctx context.Context, id string) (Suspension, error)
	// TransitionSuspension applies m, a Move of the suspension machine
	// keyed by the attempt's ID (ErrInvalid when m.Validate refuses it);
	// the attempt is settled when m.Settles. It keeps code when non-empty;
	// ErrStale when the attempt is settled or not in m.From.
	TransitionSuspension(ctx context.Context, m Move, code string) error
	// AdoptSuspension records that the device connection of owner epoch
	// epoch carries attempt id now (its OwnerEpoch), one write conditional
	// on the attempt being unsettled in state; ErrStale otherwise,
	// ErrNotFound without such an attempt. Neither the state nor
	// UpdatedAt changes (a restored attempt's timers run from UpdatedAt).
	AdoptSuspension(ctx context.Context, id, state string, epoch uint64) error
	// LatestSuspension returns the Environment's newest attempt.
	LatestSuspension(ctx context.Context, environmentID string) (Suspension, error)
	// OpenSuspensions lists every unsettled attempt, oldest first.
	OpenSuspensions(ctx context.Context) ([]Suspension, error)
	// RecordInitialization keeps an Environment's newest initialization
	// outcome (an older one, by At, never replaces it).
	RecordInitialization(ctx context.Context, i Initialization) error
	GetInitialization(ctx context.Context, environmentID string) (Initialization, error)

	// MoveInstance, GetInstance and OpenInstances: instance.go.
	Instances
	// PutSecret, GetSecret, ListSecrets and DeleteSecret: vault.go.
	Secrets
	// ProjectUsage: usage.go.
	Usages
	// Replicas and device owner leases: replica.go.
	Replicas

	// PutAgent stores a new version of an Agent: version 1 of a new ID,
	// or the version after its latest (ErrConflict otherwise: another
	// writer was first, or the ID is taken).
	PutAgent(ctx context.Context, a Agent) error
	// GetAgent returns version of the Agent (0: its latest); ErrNotFound.
	GetAgent(ctx context.Context, id string, version int) (Agent, error)
	// ListAgents lists the latest version of each of the project's Agents,
	// oldest first.
	ListAgents(ctx context.Context, project string) ([]Agent, error)

	Close() error
}

// Environment is a Core-owned workspace binding (docs/tenancy.md).
type Environment struct {
	ID      string
	Project string
	// Type is none, openai_hosted or self_hosted (wire.EnvironmentType).
	Type string
	// Binding is the local_environment Core sends for a local
	// Environment ({"id": ID} for a registered one).
	Binding json.RawMessage
	// DeviceID is the device that hosts a registered local Environment's
	// workspace; Core places its work only there. Empty for Environment
	// none, and for a local Environment stored before registration
	// existed, which no device hosts.
	DeviceID string
	// Initialization is what Core sends the Runtime through runtime_prepare
	// before the Environment is used on a connection (the public API's
	// declaration, JSON); nil declares none.
	Initialization json.RawMessage
	CreatedAt      time.Time
}

// Session is a Core-owned conversation with a fixed agent kind and
// Environment.
type Session struct {
	ID            string
	Project       string
	AgentKind     string
	EnvironmentID string
	Options       json.RawMessage
	CreatedAt     time.Time
	// Started is set once a Turn of the Session was started; with no
	// NativeSessionID recorded, the next Turn needs native Session
	// recovery (daemon-protocol.txt:38).
	Started bool
	// NativeSessionID is the native Session the Runtime reported, which
	// the next Turn resumes.
	NativeSessionID string
	// AgentID and AgentVersion are the Agent the Session runs, frozen at
	// the version it was created with; "" for a Session of a bare kind.
	AgentID      string
	AgentVersion int
}

// Agent is one version of a project's Agent (core/agent): Definition is
// its validated definition as JSON.
type Agent struct {
	ID         string
	Project    string
	Version    int
	Definition json.RawMessage
	CreatedAt  time.Time
}

// TurnState is the stored state of a Turn: a state of Core's turn
// machine (spec/turn.yaml, package fsm/turn), by name. The public status is
// its projection (Turn.Status).
type TurnState string

const (
	TurnQueued     TurnState = "queued"
	TurnClaimed    TurnState = "claimed"
	TurnCancelling TurnState = "cancelling"
	TurnStarting   TurnState = "starting"
	TurnRunning    TurnState = "running"
	TurnCompleted  TurnState = "completed"
	TurnCancelled  TurnState = "cancelled"
	TurnFailed     TurnState = "failed"
)

// Terminal reports whether s is a final state of the turn machine.
func (s TurnState) Terminal() bool {
	id, err := turn.ParseState(string(s))
	return err == nil && id.Terminal()
}

// Valid reports whether s is a state of the turn machine.
func (s TurnState) Valid() bool {
	_, err := turn.ParseState(string(s))
	return err == nil
}

// TurnMove is one move of a Turn's machine, as the store applies it: a
// conditional write from From to To. What the move also records follows
// from the rule that made it (core/turn builds moves from the table's
// effects): a claim's placement, a requeue's retry time, a terminal
// state's outcome.
type TurnMove struct {
	TurnID string
	// RunID is the Run the Turn is claimed under; "" from queued.
	RunID    string
	From, To TurnState
	// Claim is the placement of a claim (From queued): the Turn must be
	// due at Claim.At; its Run ID becomes Claim.RunID and its attempts
	// grow by one.
	Claim *Claim
	// NotBefore is when a requeued Turn (To queued) is due again; its
	// placement is cleared.
	NotBefore time.Time
	// Outcome is recorded with a terminal To.
	Outcome *Outcome
	At      time.Time
}

// Validate checks the move against the turn table: both states exist,
// some rule moves From to To, and the parts fit (a claim from queued, an
// outcome only with a terminal To).
func (m TurnMove) Validate() error {
	from, err := turn.ParseState(string(m.From))
	if err != nil {
		return fmt.Errorf("%w: Turn %s: move from %q: %v", ErrInvalid, m.TurnID, m.From, err)
	}
	to, err := turn.ParseState(string(m.To))
	if err != nil {
		return fmt.Errorf("%w: Turn %s: move to %q: %v", ErrInvalid, m.TurnID, m.To, err)
	}
	switch {
	case !turnMoves[fsm.StateID(from)][fsm.StateID(to)]:
		return fmt.Errorf("%w: Turn %s: the turn machine has no rule from %s to %s", ErrInvalid, m.TurnID, from, to)
	case (m.Claim != nil) != (from == turn.StateQueued && to == turn.StateClaimed):
		return fmt.Errorf("%w: Turn %s: a claim is the move from queued to claimed", ErrInvalid, m.TurnID)
	case m.Outcome != nil && !to.Terminal():
		return fmt.Errorf("%w: Turn %s: an outcome goes with a terminal state, not %s", ErrInvalid, m.TurnID, to)
	}
	return nil
}

// turnMoves[from][to] holds when a rule of the turn table moves from to to.
var turnMoves = movesOf(turn.Table)

// Claim identifies who executes a claimed Turn.
type Claim struct {
	DeviceID   string
	OwnerEpoch uint64
	RunID      string
	At         time.Time
}

// Turn is one user request in a Session.
type Turn struct {
	ID        string
	SessionID string
	// Input is the initial ordered MessageInput (JSON).
	Input      json.RawMessage
	State      TurnState
	Attempts   int
	NotBefore  time.Time
	DeviceID   string
	OwnerEpoch uint64
	RunID      string
	// InputCursor is the Seq of the last active input the Runtime
	// accepted; 0 before any.
	InputCursor int64
	Outcome     Outcome
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Outcome is what Core knows about a finished Turn. Reason is Core's
// observation (delivery_unknown, event_stream_incomplete, engine_failed,
// cancel_unconfirmed, ...); the engine fields and Evidence are native
// evidence, kept apart from it (daemon-protocol.txt:153, 173).
type Outcome struct {
	Reason           string
	EngineErrorCode  string
	EngineHTTPStatus int
	Evidence         json.RawMessage
}

// Public Turn failure reasons (wire-reference.md §5, Core turn projection).
const (
	ReasonDeliveryUnknown       = "delivery_unknown"
	ReasonEventStreamIncomplete = "event_stream_incomplete"
	ReasonEngineFailed          = "engine_failed"
	ReasonCancelUnconfirmed     = "cancel_unconfirmed"
	// ReasonUnplaceable: no device of the project declared what the Turn
	// requires within the placement timeout (spec/turn.yaml).
	ReasonUnplaceable = "unplaceable"
	// ReasonInvalidConfiguration: Core could not build the Run's
	// configuration (a Vault secret missing, say); nothing was sent.
	ReasonInvalidConfiguration = "invalid_configuration"
	// ReasonPersistenceFailed: Core's store failed to write part of the
	// Turn's record, so its journal is not the Run's whole stream; the
	// Run's connection was closed and its native effect is unknown
	// (core/gateway/persistence.go).
	ReasonPersistenceFailed = "persistence_failed"
)

// Status is the public projection of a Turn.
type Status struct {
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// Detail says in words what no device declared (reason
	// unplaceable), or what the configuration lacked (reason
	// invalid_configuration).
	Detail           string `json:"detail,omitempty"`
	EngineErrorCode  string `json:"engine_error_code,omitempty"`
	EngineHTTPStatus int    `json:"engine_http_status,omitempty"`
	// Cause says why Core itself cancelled the Turn: "stalled" when its
	// Run sent nothing for the stall timeout. The state (cancelled, or
	// failed cancel_unconfirmed) stays the cancellation's.
	Cause string `json:"cause,omitempty"`
}

// Status projects the stored Turn onto the public status.
//
// decision: a claimed, cancelling or starting Turn is still public
// "queued" until execution_start left: preparation submits
// no user input (daemon-protocol.txt:109) and a preparation_capacity
// rejection returns it to the queue (daemon-protocol.txt:116). The engine
// classification is shown only for a Turn that failed with engine_failed
// (daemon-protocol.txt:173).
func (t Turn) Status() Status {
	switch t.State {
	case TurnQueued, TurnClaimed, TurnCancelling, TurnStarting:
		return Status{State: "queued"}
	case TurnRunning:
		return Status{State: "running"}
	case TurnCompleted:
		return Status{State: "completed"}
	case TurnCancelled:
		return Status{State: "cancelled", Cause: t.Outcome.cause()}
	}
	s := Status{State: "failed", Reason: t.Outcome.Reason, Cause: t.Outcome.cause()}
	if t.Outcome.Reason == ReasonUnplaceable || t.Outcome.Reason == ReasonInvalidConfiguration {
		var ev struct {
			Detail string `json:"detail"`
		}
		if json.Unmarshal(t.Outcome.Evidence, &ev) == nil {
			s.Detail = ev.Detail
		}
	}
	if t.Outcome.Reason == ReasonEngineFailed {
		s.EngineErrorCode = t.Outcome.EngineErrorCode
		s.EngineHTTPStatus = t.Outcome.EngineHTTPStatus
	}
	return s
}

// cause is the cause Core recorded in the evidence of a cancellation it
// made itself (core/gateway/stall.go), or "".
func (o Outcome) cause() string {
	var ev struct {
		Cause string `json:"cause"`
	}
	if len(o.Evidence) == 0 || json.Unmarshal(o.Evidence, &ev) != nil {
		return ""
	}
	return ev.Cause
}

// Input is one active input of a Turn.
type Input struct {
	TurnID string
	Seq    int64
	// ID is the input_id delivered in prompt_steer; unique per Turn.
	ID        string
	Content   json.RawMessage
	CreatedAt time.Time
}

// Event is one journal record of a Turn's Run.
// EventSize is an event's sequence number and payload size in bytes.
type EventSize struct {
	Seq   int64
	Bytes int
}

type Event struct {
	TurnID  string
	Seq     int64
	RunID   string
	Type    string
	Payload json.RawMessage
	At      time.Time
}

// InteractionState is the life of a permission request or user-choice
// question as Core records it.
type InteractionState string

const (
	InteractionPending   InteractionState = "pending"
	InteractionAnswered  InteractionState = "answered"
	InteractionApplied   InteractionState = "applied"
	InteractionFailed    InteractionState = "failed"
	InteractionWithdrawn InteractionState = "withdrawn"
)

// Interaction is a permission request or user-choice question of a Run.
type Interaction struct {
	ID     string
	TurnID string
	RunID  string
	Kind   string
	// CallID is the wire identity a function call is answered by (its
	// call_id); "" for the other kinds, which the API answers by ID.
	CallID    string
	Request   json.RawMessage
	State     InteractionState
	Answer    json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
}

// WorkspaceWrite is a durable reservation of one workspace mutation.
type WorkspaceWrite struct {
	MutationID string
	SessionID  string
	Path       string
	// Outcome is empty while the mutation owner is held (reserved, in
	// flight, or unknown), then how it was released (workspace_write.go).
	Outcome   string
	CreatedAt time.Time
	SettledAt time.Time
	WriteDetail
}

// Device is a Runtime device as the registry knows it.
type Device struct {
	ID string
	// Project owns the device: only its Sessions and Environments use it.
	// Empty for a device no administrator assigned yet, which no project
	// may use.
	Project    string
	OwnerEpoch uint64
	// ReplicaID is the Core replica whose connection holds the current
	// owner lease ("" for a lease taken by AcquireOwner).
	ReplicaID string
	Connected bool
	// Declaration is the last valid heartbeat of the current owner, nil
	// before the first and after an invalid one.
	Declaration json.RawMessage
	LastSeen    time.Time
}

// Batch is writes committed together (Store.Commit): Moves first (a
// claim, a Turn starting, then running), then Events, then Finishes (a
// Run's terminal record after its last frames).
type Batch struct {
	Moves    []TurnMove
	Events   []Event
	Finishes []TurnMove
}

// Empty reports a batch with nothing to write.
func (b Batch) Empty() bool {
	return len(b.Moves) == 0 && len(b.Events) == 0 && len(b.Finishes) == 0
}

// BatchResult is what Commit did: one result per move and finish (nil,
// ErrStale, ErrNotFound, ErrInvalid) and the events with their sequence
// numbers (0 when not stored), in the batch's order.
type BatchResult struct {
	Moves    []error
	Events   []Event
	Finishes []error
}

// MissingTurns is Commit's error for events whose Turn does not
// exist: nil for none, else ErrNotFound naming them.
func MissingTurns(ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	return fmt.Errorf("%w: no Turn %s for %d event(s) of the batch", ErrNotFound, strings.Join(slices.Compact(slices.Sorted(slices.Values(ids))), ", "), len(ids))
}
