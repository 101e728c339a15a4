package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/console/diagrams"
	"github.com/agentwire/agentwire/wire"
)

// maxUpload is the public API's inline bound on a file written through it
// (daemon-protocol.txt:185; api.maxBody).
const maxUpload = 5 << 20

// shownSessions and shownTurns bound what the Sessions page lists.
const (
	shownSessions = 50
	shownTurns    = 10
)

// titles are the pages' default titles.
var titles = map[string]string{"login": "Sign in", "sessions": "Sessions", "session": "Session", "turn": "Turn", "devices": "Devices", "environments": "Environments", "error": "Error"}

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"pathq": url.QueryEscape,
	"deref": func(b *bool) bool { return b != nil && *b },
	// join names an entry of a listed directory ("" is the root).
	"join": func(dir, name string) string {
		if dir == "" || dir == "." {
			return name
		}
		return strings.TrimSuffix(dir, "/") + "/" + name
	},
}

// render writes a page: the template name with data, and what every page
// needs (the login's CSRF token and project, the page's name).
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, data map[string]any) {
	if data == nil {
		data = map[string]any{}
	}
	data["Page"] = name
	if _, ok := data["Title"]; !ok {
		data["Title"] = titles[name]
	}
	if s := current(r); s != nil {
		data["CSRF"] = s.csrf
		data["Project"] = s.project
		data["Admin"] = s.admin
	}
	var b bytes.Buffer
	if err := c.pages.ExecuteTemplate(&b, name, data); err != nil {
		c.cfg.Logger.Error("console: render "+name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = b.WriteTo(w)
}

// failPage renders the error page with the API's words.
func (c *Console) failPage(w http.ResponseWriter, r *http.Request, status int, what string, err error) {
	c.render(w, r, status, "error", map[string]any{"Title": what, "Error": err.Error()})
}

// apiSession and apiTurn are the API's views the pages read.
type apiSession struct {
	ID            string    `json:"id"`
	AgentKind     string    `json:"agent_kind"`
	EnvironmentID string    `json:"environment_id"`
	Environment   string    `json:"environment_type"`
	DeviceID      string    `json:"device_id"`
	CreatedAt     time.Time `json:"created_at"`
	Turns         []apiTurn `json:"-"`
	TurnsError    string    `json:"-"`
}

type apiTurn struct {
	ID        string `json:"id"`
	SessionID string `json:"session_id"`
	Status    struct {
		State  string `json:"state"`
		Reason string `json:"reason"`
		Detail string `json:"detail"`
		Cause  string `json:"cause"`
	} `json:"status"`
	Waiting *struct {
		Reason string    `json:"reason"`
		Detail string    `json:"detail"`
		Since  time.Time `json:"since"`
	} `json:"waiting"`
	Usage     json.RawMessage `json:"usage"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// lister is a store that lists Sessions (memory, SQLite, PostgreSQL).
type lister interface {
	ListSessions(ctx context.Context, project string, limit int) ([]store.Session, error)
}

// sessionsOf are the Sessions the Sessions page shows: the project's
// newest when the store lists them; otherwise those with a Turn still
// active (an embedder's store without ListSessions). Only the
// login's project's (every project's for the administration key).
func (c *Console) sessionsOf(r *http.Request) ([]store.Session, bool, error) {
	s := current(r)
	if l, ok := c.cfg.Store.(lister); ok {
		list, err := l.ListSessions(r.Context(), s.project, shownSessions)
		return list, true, err
	}
	active, err := c.cfg.Store.ActiveTurns(r.Context())
	if err != nil {
		return nil, false, err
	}
	var out []store.Session
	for _, t := range active {
		if len(out) == shownSessions || slices.ContainsFunc(out, func(x store.Session) bool { return x.ID == t.SessionID }) {
			continue
		}
		x, err := c.cfg.Store.GetSession(r.Context(), t.SessionID)
		if err == nil && s.sees(x.Project) {
			out = append(out, x)
		}
	}
	return out, false, nil
}

// sessionsPage lists the project's Sessions with their newest Turns. It
// reads the store (a page of fifty Sessions through the API would spend
// a hundred of the project's requests), showing each Turn by the public
// status projection the API shows; the Turn's own page reads the API.
func (c *Console) sessionsPage(w http.ResponseWriter, r *http.Request) {
	var envs struct {
		Environments []map[string]any `json:"environments"`
	}
	if err := c.get(r, "/api/v1/environments", &envs); err != nil {
		c.failPage(w, r, http.StatusBadGateway, "Sessions", err)
		return
	}
	list, complete, err := c.sessionsOf(r)
	if err != nil {
		c.failPage(w, r, http.StatusInternalServerError, "Sessions", fmt.Errorf("list sessions: %w", err))
		return
	}
	views := make([]apiSession, 0, len(list))
	for _, x := range list {
		v := apiSession{ID: x.ID, AgentKind: x.AgentKind, EnvironmentID: x.EnvironmentID, CreatedAt: x.CreatedAt}
		if env, err := c.cfg.Store.GetEnvironment(r.Context(), x.EnvironmentID); err == nil {
			v.Environment, v.DeviceID = env.Type, env.DeviceID
		}
		turns, err := c.cfg.Store.SessionTurns(r.Context(), x.ID, shownTurns)
		if err != nil {
			v.TurnsError = "the Turns could not be read"
		}
		for i := len(turns) - 1; i >= 0; i-- { // newest first
			t := turns[i]
			tv := apiTurn{ID: t.ID, SessionID: t.SessionID, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
			st := t.Status()
			tv.Status.State, tv.Status.Reason, tv.Status.Detail, tv.Status.Cause = st.State, st.Reason, st.Detail, st.Cause
			v.Turns = append(v.Turns, tv)
		}
		views = append(views, v)
	}
	c.render(w, r, http.StatusOK, "sessions", map[string]any{"Sessions": views, "Complete": complete, "Environments": envs.Environments, "Error": r.URL.Query().Get("error")})
}

func (c *Console) turnsOf(r *http.Request, sessionID string, limit int) ([]apiTurn, string) {
	var body struct {
		Turns []apiTurn `json:"turns"`
	}
	if err := c.get(r, "/api/v1/sessions/"+url.PathEscape(sessionID)+"/turns?limit="+strconv.Itoa(limit), &body); err != nil {
		return nil, err.Error()
	}
	slices.Reverse(body.Turns) // newest first
	return body.Turns, ""
}

// createSession posts the form to the API's POST /api/v1/sessions.
func (c *Console) createSession(w http.ResponseWriter, r *http.Request) {
	req := map[string]any{"agent_kind": strings.TrimSpace(r.PostFormValue("agent_kind"))}
	if env := strings.TrimSpace(r.PostFormValue("environment_id")); env != "" {
		req["environment_id"] = env
	}
	res := c.post(r, http.MethodPost, "/api/v1/sessions", req)
	var s apiSession
	if err := res.decode(&s); err != nil {
		http.Redirect(w, r, Prefix+"?error="+url.QueryEscape(err.Error()), http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, Prefix+"sessions/"+url.PathEscape(s.ID), http.StatusSeeOther)
}

// sessionPage shows a Session, its Turns, a prompt for a new Turn and its
// workspace's files (?path= a directory, ?file= a file to read).
func (c *Console) sessionPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("session_id")
	var s apiSession
	if err := c.get(r, "/api/v1/sessions/"+url.PathEscape(id), &s); err != nil {
		c.failPage(w, r, http.StatusNotFound, "Session "+id, err)
		return
	}
	s.Turns, s.TurnsError = c.turnsOf(r, id, 100)
	data := map[string]any{"Session": s, "Error": r.URL.Query().Get("error"), "Notice": r.URL.Query().Get("notice")}
	if s.DeviceID != "" { // a workspace on a device: files to show
		dir := r.URL.Query().Get("path")
		var listing struct {
			Path      string                         `json:"path"`
			Entries   []wire.WorkspaceDirectoryEntry `json:"entries"`
			Truncated bool                           `json:"truncated"`
		}
		q := ""
		if dir != "" {
			q = "?path=" + url.QueryEscape(dir)
		}
		if err := c.get(r, "/api/v1/sessions/"+url.PathEscape(id)+"/files"+q, &listing); err != nil {
			data["FilesError"] = err.Error()
		} else {
			data["Files"] = listing
		}
		data["Dir"] = dir
		if file := r.URL.Query().Get("file"); file != "" {
			var content struct {
				Path      string `json:"path"`
				Data      []byte `json:"data"`
				SizeBytes int    `json:"size_bytes"`
				Truncated bool   `json:"truncated"`
			}
			if err := c.get(r, "/api/v1/sessions/"+url.PathEscape(id)+"/files/content?path="+url.QueryEscape(file), &content); err != nil {
				data["FileError"] = err.Error()
			} else {
				data["File"] = map[string]any{"Path": file, "Text": string(content.Data), "Size": content.SizeBytes, "Truncated": content.Truncated}
			}
		}
	}
	if id := r.URL.Query().Get("write"); id != "" {
		// The write's machine, at the state Core persists for it.
		var rec struct {
			MutationID string `json:"mutation_id"`
			Path       string `json:"path"`
			Outcome    string `json:"outcome"`
			State      string `json:"state"`
		}
		if err := c.get(r, "/api/v1/writes/"+url.PathEscape(id), &rec); err == nil && rec.State != "" {
			data["Write"] = rec
		}
	}
	c.render(w, r, http.StatusOK, "session", data)
}

// textInput is a MessageInput of one text message.
func textInput(text string) wire.MessageInput {
	return wire.MessageInput{{Content: []wire.InputContent{{Type: "input_text", Text: text}}}}
}

// createTurn posts the prompt to POST /api/v1/sessions/{id}/turns and
// goes to the new Turn's page.
func (c *Console) createTurn(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("session_id")
	res := c.post(r, http.MethodPost, "/api/v1/sessions/"+url.PathEscape(id)+"/turns", map[string]any{"input": textInput(r.PostFormValue("prompt"))})
	var t apiTurn
	if err := res.decode(&t); err != nil {
		http.Redirect(w, r, Prefix+"sessions/"+url.PathEscape(id)+"?error="+url.QueryEscape(strings.Replace(err.Error(), "input[0].content", "prompt", 1)), http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, Prefix+"turns/"+url.PathEscape(t.ID), http.StatusSeeOther)
}

// uploadFile writes one file of the form into the Session's workspace
// through PUT /api/v1/sessions/{id}/files/content.
func (c *Console) uploadFile(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("session_id")
	back := Prefix + "sessions/" + url.PathEscape(id)
	fail := func(msg string) {
		http.Redirect(w, r, back+"?error="+url.QueryEscape(msg), http.StatusSeeOther)
	}
	f, hdr, err := r.FormFile("file")
	if err != nil {
		fail("file: choose a file to upload (at most 5 MiB)")
		return
	}
	defer f.Close()
	if hdr.Size > maxUpload {
		fail(fmt.Sprintf("file: %d bytes is over the 5 MiB bound", hdr.Size))
		return
	}
	body, err := io.ReadAll(io.LimitReader(f, maxUpload+1))
	if err != nil || len(body) > maxUpload {
		fail("file: could not be read within the 5 MiB bound")
		return
	}
	path := strings.TrimSpace(r.PostFormValue("path"))
	if path == "" {
		path = hdr.Filename
	}
	res := c.call(r.Context(), r, current(r).key, http.MethodPut, "/api/v1/sessions/"+url.PathEscape(id)+"/files/content?path="+url.QueryEscape(path), bytes.NewReader(body), "application/octet-stream")
	var rec struct {
		MutationID string `json:"mutation_id"`
	}
	if err := res.decode(&rec); err != nil {
		fail(err.Error())
		return
	}
	http.Redirect(w, r, back+"?notice="+url.QueryEscape("wrote "+path)+"&write="+url.QueryEscape(rec.MutationID), http.StatusSeeOther)
}

// turnPage is the live Turn: its status and placement reason, and the
// places the script fills from the event stream.
func (c *Console) turnPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("turn_id")
	var t apiTurn
	if err := c.get(r, "/api/v1/turns/"+url.PathEscape(id), &t); err != nil {
		c.failPage(w, r, http.StatusNotFound, "Turn "+id, err)
		return
	}
	c.render(w, r, http.StatusOK, "turn", map[string]any{"Turn": t})
}

// capabilityRow is one capability of spec/capabilities.yaml with what each
// declared kind of a device says of it.
type capabilityRow struct {
	Name, Doc string
	Values    []string
}

type deviceView struct {
	DeviceID   string                    `json:"device_id"`
	Project    string                    `json:"project"`
	Connected  bool                      `json:"connected"`
	OwnerEpoch uint64                    `json:"owner_epoch"`
	LastSeen   time.Time                 `json:"last_seen"`
	AgentKinds []wire.SupportedAgentKind `json:"agent_kinds"`
	Rows       []capabilityRow           `json:"-"`
}

// devicesPage lists the devices with each kind's declaration, one row per
// capability of the generated list (wire.CapabilityFields), so a
// capability added to the spec shows up here with no change to the page.
func (c *Console) devicesPage(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Devices []deviceView `json:"devices"`
	}
	if err := c.get(r, "/api/v1/devices", &body); err != nil {
		c.failPage(w, r, http.StatusBadGateway, "Devices", err)
		return
	}
	for i := range body.Devices {
		d := &body.Devices[i]
		for _, f := range wire.CapabilityFields() {
			row := capabilityRow{Name: f.Name, Doc: f.Doc}
			for k := range d.AgentKinds {
				row.Values = append(row.Values, supportWord(*f.Of(&d.AgentKinds[k].Capabilities)))
			}
			d.Rows = append(d.Rows, row)
		}
	}
	c.render(w, r, http.StatusOK, "devices", map[string]any{"Devices": body.Devices})
}

func supportWord(s wire.CapabilitySupport) string {
	switch s {
	case wire.Supported:
		return "yes"
	case wire.Unsupported:
		return "no"
	}
	return "undeclared"
}

// environmentsPage lists the Environments with the Sessions on each, whose
// pages hold the files.
func (c *Console) environmentsPage(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Environments []struct {
			ID        string          `json:"id"`
			Type      string          `json:"type"`
			DeviceID  string          `json:"device_id"`
			Binding   json.RawMessage `json:"binding"`
			Status    json.RawMessage `json:"initialization_status"`
			Suspended json.RawMessage `json:"suspension"`
			CreatedAt time.Time       `json:"created_at"`
			Sessions  []string        `json:"-"`
		} `json:"environments"`
	}
	if err := c.get(r, "/api/v1/environments", &body); err != nil {
		c.failPage(w, r, http.StatusBadGateway, "Environments", err)
		return
	}
	if l, ok := c.cfg.Store.(lister); ok {
		list, err := l.ListSessions(r.Context(), current(r).project, 0)
		if err == nil {
			for i := range body.Environments {
				for _, s := range list {
					if s.EnvironmentID == body.Environments[i].ID {
						body.Environments[i].Sessions = append(body.Environments[i].Sessions, s.ID)
					}
				}
			}
		}
	}
	c.render(w, r, http.StatusOK, "environments", map[string]any{"Environments": body.Environments})
}

// diagram serves a machine's generated SVG (IDs state-<s>, tr-<from>-<to>).
func (c *Console) diagram(w http.ResponseWriter, r *http.Request) {
	m := r.PathValue("machine")
	if !slices.Contains(diagrams.Machines, m) {
		consoleError(w, http.StatusNotFound, "not_found", "machine", "no machine "+strconv.Quote(m))
		return
	}
	b, err := diagrams.SVG.ReadFile(m + ".svg")
	if err != nil {
		consoleError(w, http.StatusInternalServerError, "internal", "", "diagram missing")
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	_, _ = w.Write(b)
}
