package gateway

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agentwire/agentwire/internal/core/gateway/internal/export"
	"github.com/agentwire/agentwire/wire"
)

// Workspace exports (daemon-protocol.txt:185, wire-reference.md §2.11):
// Core pulls the tar archive of the workspace's outputs through a ready
// read-only preparation on the Session's scheduling reservation, like an
// idle read: the archive goes out only after the handle's confirmed close.
// The lifecycle itself (records, hooks, the pulls) is the export module.

// Bounds and reasons of an export (core/gateway/internal/export).
const (
	MaxExportBytes   = export.MaxBytes
	ExportTooLarge   = export.TooLarge
	ExportIncomplete = export.Incomplete
)

// ExportWorkspace pulls the Session's output archive (a tar) and returns
// it once the read-only handle's close is confirmed; every other end is a
// *ReadError without data. An export is never retried or resumed.
func (g *Gateway) ExportWorkspace(ctx context.Context, sessionID string) (ReadData, error) {
	ses, err := g.cfg.Store.GetSession(ctx, sessionID)
	if err != nil {
		return ReadData{}, err
	}
	env, err := g.cfg.Store.GetEnvironment(ctx, ses.EnvironmentID)
	if err != nil {
		return ReadData{}, err
	}
	envType, err := wire.ParseEnvironmentType(env.Type)
	if err != nil || !envType.Local() || len(env.Binding) == 0 {
		return ReadData{}, ErrNoWorkspace
	}
	var binding wire.LocalEnvironment
	if err := json.Unmarshal(env.Binding, &binding); err != nil || binding.ID == "" {
		return ReadData{}, ErrNoWorkspace
	}
	if _, _, idle := g.holdForIdleRead(ctx, sessionID); !idle {
		// decision: an export needs a read-only handle, which only an idle
		// Session's reservation gives (daemon-protocol.txt:177, 183); a
		// running Turn or another read makes it busy, as for a read.
		return ReadData{}, ErrSessionBusy
	}
	p := turnPlan{session: ses, env: env, admit: wire.AdmissionInput{Environment: envType, IdleFilesRead: true}}
	if p.required, err = wire.RequiredCapabilities(p.admit); err != nil {
		g.dropReadHold(sessionID)
		return ReadData{}, err
	}
	out := make(chan readEnd, 1)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		data, err := g.idleOwner(p, binding, func(c *conn, handle string) (ReadData, error) {
			return g.exportOnce(c, handle, binding.ID)
		})
		data.Target = "preparation"
		g.dropReadHold(sessionID)
		out <- readEnd{data, err}
	}()
	select {
	case end := <-out:
		return end.data, end.err
	case <-ctx.Done():
		return ReadData{}, ctx.Err()
	}
}

// exportOnce pulls one archive through handle on c.
func (g *Gateway) exportOnce(c *conn, handle, envID string) (ReadData, error) {
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()
	data, err := c.exports.Pull(g.ctx, pc, handle, envID)
	var end *export.Ended
	switch {
	case err == nil:
		return ReadData{Data: data, DeviceID: c.deviceID}, nil
	case errors.As(err, &end):
		return ReadData{}, &ReadError{Code: end.Code, Rejected: end.Rejected, Detail: end.Detail}
	}
	return ReadData{}, unavailable(ReadUnknown, boundedErr(err))
}
