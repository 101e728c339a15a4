package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/connection"
	"github.com/agentwire/agentwire/fsm/machines"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/peer/guard"
	"github.com/agentwire/agentwire/wire"
)

var connKey = peer.Key{Machine: connection.Name}

// upgradeCheck is what the connection machine's guards read: the facts of
// the upgrade request, established before the machine steps (guards only
// read).
type upgradeCheck struct {
	paramsMissing   bool
	versionMismatch bool
	credErr         error
}

// conn is one physical Runtime connection and the connection machine's
// Core hooks for it.
type conn struct {
	g        *Gateway
	deviceID string
	log      *slog.Logger
	check    upgradeCheck
	w        http.ResponseWriter // only while the upgrade is decided

	epoch    uint64
	epochErr error
	lease    leaseState // lease.go
	d        *peer.Driver
	// cred is the device credential the upgrade authenticated with; each
	// heartbeat asks whether it is still valid (revocation is immediate).
	cred store.Credential
	// retiring is set once a revocation was seen, so retired_close is
	// fired once.
	retiring atomic.Bool

	// pc is set once the socket is accepted; mu guards it for supersede.
	pc *peer.Conn
	// admissions counts the Turns claimed for this connection whose start
	// was not sent yet (maxAdmissions bounds it).
	admissions atomic.Int32

	mu   sync.Mutex
	ws   *websocket.Conn
	decl *wire.Heartbeat
	// project owns the device (store.Device.Project), read when the owner
	// lease is taken and again at each heartbeat; "" places nothing here.
	project string
	// pending is the batch the loop commits at its Ready, and after are
	// what waits for that commit (journal.go); only the loop touches them.
	pending store.Batch
	after   []func()
	writer  batchWriter // commits the batches off the loop (journal.go)
	// declKey and declAt are the declaration last written to the store
	// (without its timestamp and load) and when (DoRecordCapabilities).
	declKey []byte
	declAt  time.Time
	// backlog is the bytes of journal events handed to the batch and not
	// committed yet (journal.go, overflows).
	backlog atomic.Int64
	// storeLost is set once the store failed to write the connection's
	// batch, which aborts it (persistence.go).
	storeLost atomic.Bool
	// parts are the connection's lifecycle modules (parts.go).
	parts
}

// declarationRefresh is how often an unchanged declaration is written
// again (DoRecordCapabilities).
const declarationRefresh = time.Minute

// coreTables are the machines Core drives on every connection.
var coreTables = machines.CoreTables()

// coreRouter resolves every frame's instance from the catalog, once.
var coreRouter = peer.MustCatalogRouter(coreTables)

var _ connection.CoreHooks[*peer.Event] = (*conn)(nil)

func (g *Gateway) upgrade(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use GET")
		return
	}
	// Only the header carries the credential; a credential in the query
	// string is never read (daemon-protocol.txt:13).
	q := r.URL.Query()
	deviceID, version := q.Get("device_id"), q.Get("version")
	secret := credential.BearerToken(r.Header.Get("Authorization"))
	c := &conn{g: g, deviceID: deviceID, w: w}
	c.log = g.cfg.Logger.With("device_id", deviceID)
	c.initParts()
	// The reference's order: missing parameters, then the version (426
	// even with a bad credential, daemon-protocol.txt:17), then the
	// credential.
	switch {
	case deviceID == "" || version == "" || secret == "":
		c.check.paramsMissing = true
	case !wire.VersionCompatible(version):
		c.check.versionMismatch = true
	default:
		c.cred, c.check.credErr = g.cfg.Credentials.AuthenticateDevice(r.Context(), secret, deviceID)
	}

	d, err := peer.New(peer.Config{
		Role: fsm.RoleCore, Tables: coreTables, Router: coreRouter, App: c,
		Clock: g.cfg.Clock, Logger: c.log, Label: deviceID, Durations: g.cfg.Durations,
		Saver: c.moved,
	})
	c.d = d
	if err == nil {
		// The connection's lifecycle starts with a local event (the
		// upgrade request), so its one instance is opened first.
		_, err = d.Open(connKey)
	}
	if err == nil {
		err = d.Local(connKey, fsm.EventID(connection.EventUpgradeRequested), nil)
	}
	if err != nil {
		c.log.Error("gateway: upgrade", "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "the connection could not be set up")
		return
	}
	inst, _ := d.Lookup(connKey)
	if inst == nil || inst.Terminal() {
		return // refused: DoRefuseUpgrade answered
	}
	if c.epochErr != nil {
		writeError(w, http.StatusInternalServerError, "internal", "the owner lease could not be taken")
		return
	}
	ws, err := websocket.Accept(w, r, nil)
	c.w = nil
	if err != nil {
		c.log.Warn("gateway: websocket accept failed", "err", err)
		g.release(c)
		return
	}
	var tr peer.Transport = peer.WebSocket(ws)
	if g.trans != nil {
		tr = &recording{Transport: tr, t: g.trans, device: deviceID}
	}
	pc := peer.NewConn(d, tr, peer.ConnConfig{ReadTimeout: g.cfg.ReadTimeout, Ready: c.commit, Durable: c.durable})
	c.mu.Lock()
	c.ws, c.pc = ws, pc
	c.mu.Unlock()
	g.mu.Lock()
	replaced := g.conns[deviceID] != c
	g.mu.Unlock()
	if replaced {
		// A newer connection took the lease while this one was being
		// accepted: it never runs.
		_ = ws.Close(websocket.StatusCode(peer.StatusReplaced), "replaced by a newer connection")
		return
	}
	// The connection runs on a goroutine of its own and the handler
	// returns: the request, and the stack the HTTP server grew to serve
	// it, go with the handler instead of staying with every idle
	// connection for its lifetime (issue 21).
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		runErr := pc.Run(g.ctx)
		c.log.Info("gateway: connection closed", "reason", errText(runErr)) // the epoch is on c.log already
		c.abandonAll()
		g.release(c)
	}()
}

func errText(err error) string {
	if err == nil {
		return "closed"
	}
	return err.Error()
}

// release forgets c as its device's owner (if it still is) and marks the
// device offline unless a newer connection fenced it.
func (g *Gateway) release(c *conn) {
	g.mu.Lock()
	if g.conns[c.deviceID] == c {
		delete(g.conns, c.deviceID)
	}
	g.mu.Unlock()
	g.placementChanged()
	ctx, cancel := g.storeCtx()
	defer cancel()
	err := g.cfg.Store.ReleaseOwner(ctx, c.deviceID, c.epoch, g.cfg.Clock.Now())
	if err != nil && !errors.Is(err, store.ErrStale) {
		c.log.Warn("gateway: release owner", "err", err)
	}
}

func (c *conn) snapshot() (wire.Heartbeat, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.decl == nil {
		return wire.Heartbeat{}, false
	}
	return *c.decl, true
}

// Refused implements peer.App. A heartbeat that fails to decode is still
// a heartbeat for the connection machine: its declaration is invalid, so
// the machine clears the snapshot and closes the transport
// (daemon-protocol.txt:25).
func (c *conn) Refused(r *peer.Refusal) {
	if r.Kind == peer.RefusedDecode && r.Type() == wire.TypeHeartbeat {
		c.log.Warn("gateway: invalid heartbeat", "trace_id", r.Trace.TraceIDString(), "err", r.Err)
		_ = c.d.Local(connKey, fsm.EventID(connection.EventHeartbeat), r.Err)
	}
}

func (c *conn) GuardParamsMissing(*fsm.Firing[*peer.Event]) bool   { return c.check.paramsMissing }
func (c *conn) GuardVersionMismatch(*fsm.Firing[*peer.Event]) bool { return c.check.versionMismatch }
func (c *conn) GuardCredentialRefused(*fsm.Firing[*peer.Event]) bool {
	return c.check.credErr != nil
}

// GuardValidDeclaration: the driver decoded the heartbeat strictly; a
// heartbeat that did not decode arrives here without a message.
func (c *conn) GuardValidDeclaration(f *fsm.Firing[*peer.Event]) bool {
	return guard.ValidDeclaration(f.Arg.Payload())
}

func (c *conn) DoRefuseUpgrade(*fsm.Firing[*peer.Event]) error {
	switch {
	case c.check.paramsMissing:
		writeError(c.w, http.StatusBadRequest, "missing_params", "device_id, version and a Bearer header are required")
	case c.check.versionMismatch:
		writeError(c.w, http.StatusUpgradeRequired, "incompatible_version", "this Core speaks wire version "+wire.Version+" only")
	default:
		authError(c.w, c.check.credErr)
	}
	return nil
}

// DoReplacePrevious fences the owner lease with one conditional write
// (the store increments the epoch) and supersedes the older connection.
func (c *conn) DoReplacePrevious(*fsm.Firing[*peer.Event]) error {
	ctx, cancel := context.WithTimeout(c.g.ctx, 3*time.Second)
	defer cancel()
	now := c.g.cfg.Clock.Now()
	until := c.g.leaseUntil(now)
	c.epoch, c.epochErr = c.g.cfg.Store.AcquireLease(ctx, c.deviceID, c.g.cfg.Replica.ID, now, until)
	if c.epochErr != nil {
		return c.epochErr
	}
	if !until.IsZero() {
		c.lease.validUntil.Store(until.UnixNano())
	}
	c.lease.takenAt.Store(c.g.cfg.Clock.Now().UnixNano())
	c.log = c.log.With("epoch", c.epoch)
	if err := c.refreshProject(ctx); err != nil {
		return err
	}
	c.g.mu.Lock()
	old := c.g.conns[c.deviceID]
	c.g.conns[c.deviceID] = c
	c.g.mu.Unlock()
	c.g.placementChanged()
	if old != nil {
		c.log.Warn("gateway: the device connected again while its connection was live; the newer connection wins (if this repeats, two Runtimes share the device ID)", "old_epoch", old.epoch)
		old.supersede()
	}
	return nil
}

// supersede fires superseded on this (older) connection's own loop.
func (c *conn) supersede() {
	c.g.wg.Add(1)
	go func() {
		defer c.g.wg.Done()
		c.mu.Lock()
		pc := c.pc
		c.mu.Unlock()
		if pc == nil {
			// Not accepted yet: it checks the owner after accepting.
			return
		}
		_ = pc.Do(c.g.ctx, func(d *peer.Driver) {
			_ = d.Local(connKey, fsm.EventID(connection.EventSuperseded), nil)
		})
	}()
}

// DoEvictRoutes: the connection's Runs and admissions are its driver's
// instances, which see connection_lost when its loop ends (the Runs then
// record event_stream_incomplete); its admission snapshot goes now, so
// the scheduler selects it no more.
func (c *conn) DoEvictRoutes(*fsm.Firing[*peer.Event]) error {
	c.clearSnapshot()
	return nil
}

func (c *conn) DoRecordCapabilities(f *fsm.Firing[*peer.Event]) error {
	hb := f.Arg.Msg.Payload.(wire.Heartbeat)
	raw, err := json.Marshal(hb)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.decl = &hb
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(c.g.ctx, 3*time.Second)
	defer cancel()
	// decision: the reference persists every heartbeat within 3 s
	// (wire-reference.md §2.3); here a heartbeat is written when its
	// declaration changed and otherwise at most every declarationRefresh,
	// so thousands of idle devices do not cost a store write each every
	// 15 s. Liveness is the connection itself (in memory); the stored
	// last_seen trails it by at most that long.
	now := c.g.cfg.Clock.Now()
	same := hb
	same.TS, same.ActiveRequests = 0, 0
	key, _ := json.Marshal(same)
	if !bytes.Equal(key, c.declKey) {
		c.g.placementChanged()
	}
	if !bytes.Equal(key, c.declKey) || now.Sub(c.declAt) >= declarationRefresh {
		if err := c.g.cfg.Store.RecordDeclaration(ctx, c.deviceID, c.epoch, raw, now); err != nil && !errors.Is(err, store.ErrStale) {
			return err
		}
		c.declKey, c.declAt = key, now
	}
	if err := c.refreshProject(ctx); err != nil {
		return err
	}
	c.checkCredential(ctx)
	c.g.kick() // a declaration may admit a queued Turn
	return nil
}

// refreshProject reads which project owns the device now: an
// administrator's assignment reaches a live connection at its next
// heartbeat.
func (c *conn) refreshProject(ctx context.Context) error {
	d, err := c.g.cfg.Store.GetDevice(ctx, c.deviceID)
	if err != nil {
		return err
	}
	c.mu.Lock()
	changed := c.project != d.Project
	c.project = d.Project
	c.mu.Unlock()
	if changed {
		c.g.placementChanged()
	}
	return nil
}

func (c *conn) owner() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.project
}

// checkCredential retires the connection once its credential was revoked:
// the check runs at every heartbeat, so a revocation closes the live
// connection within one heartbeat interval (docs/tenancy.md). The
// retired_close event is fired from the connection's own loop, after this
// step.
func (c *conn) checkCredential(ctx context.Context) {
	err := c.g.cfg.Credentials.Valid(ctx, c.cred)
	if !errors.Is(err, credential.ErrBad) || !c.retiring.CompareAndSwap(false, true) {
		if err != nil && !errors.Is(err, credential.ErrBad) {
			c.log.Warn("gateway: credential check", "err", err)
		}
		return
	}
	c.log.Warn("gateway: the device credential was revoked; closing the connection", "credential_id", c.cred.ID)
	c.clearSnapshot()
	c.g.wg.Add(1)
	go func() {
		defer c.g.wg.Done()
		c.mu.Lock()
		pc := c.pc
		c.mu.Unlock()
		if pc != nil {
			_ = pc.Do(c.g.ctx, func(d *peer.Driver) {
				_ = d.Local(connKey, fsm.EventID(connection.EventRetiredClose), nil)
			})
		}
	}()
}

func (c *conn) clearSnapshot() {
	c.mu.Lock()
	c.decl = nil
	c.mu.Unlock()
	c.g.placementChanged()
	ctx, cancel := context.WithTimeout(c.g.ctx, 3*time.Second)
	defer cancel()
	_ = c.g.cfg.Store.RecordDeclaration(ctx, c.deviceID, c.epoch, nil, c.g.cfg.Clock.Now())
}

func (c *conn) DoClearAdmissionSnapshot(*fsm.Firing[*peer.Event]) error {
	c.clearSnapshot()
	return nil
}

// DoCloseTransport closes the socket with the code its reason calls for.
// The close handshake runs off the loop so that the loop keeps reading
// (coder/websocket needs a reader to see the peer's close frame).
func (c *conn) DoCloseTransport(f *fsm.Firing[*peer.Event]) error {
	code, reason := peer.StatusGoingAway, "connection lost"
	switch {
	case c.storeLost.Load():
		code, reason = peer.StatusInternal, StoreFailedReason
	case connection.State(f.To) == connection.StateReplaced:
		code, reason = peer.StatusReplaced, "replaced by a newer connection"
	case connection.State(f.To) == connection.StateRetired:
		code, reason = peer.StatusRetired, "the device credential was revoked"
	case connection.Event(f.Event) == connection.EventHeartbeat:
		code, reason = peer.StatusPolicy, "invalid heartbeat declaration"
	case connection.Event(f.Event) == connection.EventReadDeadline:
		code, reason = peer.StatusPolicy, "read deadline exceeded"
	}
	c.g.wg.Add(1)
	go func() {
		defer c.g.wg.Done()
		c.closeWS(code, reason)
	}()
	return nil
}

func (c *conn) closeWS(code peer.StatusCode, reason string) {
	c.mu.Lock()
	ws := c.ws
	c.mu.Unlock()
	if ws != nil {
		_ = ws.Close(websocket.StatusCode(code), reason)
	}
}

func (c *conn) DoDropConnectionState(*fsm.Firing[*peer.Event]) error { return nil }
