package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/wire"
)

// consoleScript is what the browser test's main Turn plays: output, a
// permission question, a user-choice question, a function call, then a
// wait for active input, usage and more output.
const consoleScript = `{"steps":[
	{"delta":"hello "},
	{"thinking":"considering the workspace"},
	{"tool_call":{"id":"t1","name":"ls","stage":"before","args":{"path":"."}}},
	{"permission":{"request_id":"perm-1","tool":"shell","title":"run ls"}},
	{"choice":{"ask_id":"ask-1","questions":[{"id":"colour","question":"Which colour?","options":[{"label":"blue"},{"label":"red"}]}]}},
	{"function":{"call_id":"call-1","name":"lookup","arguments":{"q":"x"}}},
	{"await_input":true},
	{"usage":{"input_tokens":3,"output_tokens":5}},
	{"delta":" bye"}
]}`

// browserFlags are the flags the console's browser test runs Chromium
// with: headless, and nothing that reaches beyond the machine.
var browserFlags = []string{"headless", "no-sandbox", "disable-gpu", "disable-quic", "no-first-run",
	"disable-background-networking", "disable-component-update", "disable-sync"}

// TestConsoleInBrowser drives the web console in real headless Chromium
// against a real Core and a real Runtime (script adapter): log in by
// keyboard, start a Turn, watch its deltas arrive, approve its permission
// question, answer its user-choice question and its function call by
// keyboard, send active input by keyboard and see it
// accepted, watch the run machine's diagram reach completed, cancel a
// second Turn by keyboard; axe-core finds no serious or critical problem
// on any page, and each page is saved as a screenshot. It runs from
// `make test-console`, which installs axe-core and checks for Chromium.
func TestConsoleInBrowser(t *testing.T) {
	if os.Getenv("AGENTWIRE_CONSOLE_BROWSER") == "" {
		t.Skip("needs Chromium and axe-core: run make test-console")
	}
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	axe, err := os.ReadFile(os.Getenv("AXE_JS"))
	require.NoError(t, err, "AXE_JS names axe.min.js of the pinned axe-core")
	shots := consoleArtifacts(t)

	// Two Runtimes: dev-1 plays consoleScript (kind script); dev-2 plays a
	// Turn that runs until it is cancelled (kind hanger). The script
	// adapter names its questions by the script's fixed IDs, so one
	// connection asks a given question once.
	bin := buildAgentwire(t)
	data := t.TempDir()
	dev := issueCredential(t, bin, data, "--kind", "device", "--device", "dev-1", "--project", "demo")
	dev2 := issueCredential(t, bin, data, "--kind", "device", "--device", "dev-2", "--project", "demo")
	proj := issueCredential(t, bin, data, "--kind", "project", "--project", "demo")
	core := startCore(t, bin, data)
	dir := t.TempDir()
	// dev-1 also hosts a workspace, registered as an Environment.
	ws := filepath.Join(dir, "workspace")
	require.NoError(t, os.MkdirAll(ws, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "README.md"), []byte("hello from the workspace\n"), 0o644))
	envID := cliJSON(t, bin, proj.Secret, "env", "create", "--core", core.base, "--device", "dev-1")["id"].(string)
	upload := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(upload, []byte("uploaded through the console\n"), 0o644))
	var rtLogs []*lockedBuffer
	for _, rt := range []struct {
		device, secret, script string
		args                   []string
	}{
		{"dev-1", dev.Secret, consoleScript, []string{"--environment", envID + "=" + ws}},
		{"dev-2", dev2.Secret, `{"kind":"hanger","steps":[{"delta":"working "},{"hang":true}]}`, nil},
	} {
		cred := filepath.Join(dir, rt.device+".credential")
		require.NoError(t, os.WriteFile(cred, []byte(rt.secret), 0o600))
		script := filepath.Join(dir, rt.device+".json")
		require.NoError(t, os.WriteFile(script, []byte(rt.script), 0o600))
		rtLogs = append(rtLogs, startRuntimeProcess(t, bin, nil, append([]string{"--core", core.base, "--device-id", rt.device, "--credential-file", cred, "--harness", "script=" + script}, rt.args...)...))
	}
	defer func() {
		if t.Failed() {
			t.Logf("core logs:\n%s\nruntime logs:\n%s\n%s", core.logs.String(), rtLogs[0].String(), rtLogs[1].String())
		}
	}()

	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(chromium), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1000)}
	for _, f := range browserFlags {
		opts = append(opts, chromedp.Flag(f, true))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	require.NoError(t, chromedp.Do(bctx)) // starts the browser, with no deadline on it
	ctx, cancel := context.WithTimeout(bctx, 4*time.Minute)
	defer cancel()

	b := &consoleBrowser{t: t, ctx: ctx, base: core.base, axe: string(axe), shots: shots}

	// Log in with the keyboard alone.
	b.do(chromedp.Navigate(core.base + "/console/"))
	b.waitFor(`location.pathname === "/console/login"`)
	b.check("login")
	b.tabTo("#key")
	b.do(chromedp.KeyEvent(proj.Secret), chromedp.KeyEvent("\r"))
	b.waitFor(`location.pathname === "/console/" && document.querySelector("h1").textContent === "Sessions"`)
	b.check("sessions-empty")
	assert.Equal(t, false, b.eval(`document.cookie.includes("agentwire_console")`), "the session cookie is HTTP-only")

	// A Session in the Environment: its files are listed, read, written
	// and exported through the console.
	b.do(chromedp.SendKeys("#agent_kind", "script"), chromedp.SetValue("#environment_id", envID), chromedp.Submit("#agent_kind"))
	b.waitFor(`location.pathname.startsWith("/console/sessions/ses_")`)
	sessionURL := b.evalString(`location.href`)
	b.waitFor(`document.querySelector("main").textContent.includes("README.md")`)
	b.do(chromedp.Click(`main a[href*="file=README.md"]`))
	b.waitFor(`(document.querySelector("pre.file") || {}).textContent === "hello from the workspace\n"`)
	b.check("session-files")
	b.do(chromedp.SendKeys("#upload-path", "notes.txt"), chromedp.SetUploadFiles("#upload-file", []string{upload}), chromedp.Submit("#upload-file"))
	b.waitFor(`(document.querySelector('[role=status]') || {}).textContent === "wrote notes.txt"`)
	b.waitFor(`document.querySelector("main table").textContent.includes("notes.txt")`)
	// The write's machine, lit at the state Core persisted for it.
	b.waitFor(`!!document.querySelector('figure[data-machine="workspace_write"][data-state="completed"] [data-id="state-completed"].aw-current')`)
	assert.Equal(t, "200 application/x-tar", b.evalAsync(`fetch(document.querySelector('a[href$="/export"]').href).then(r => r.status + " " + r.headers.get("Content-Type"))`))
	written, err := os.ReadFile(filepath.Join(ws, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "uploaded through the console\n", string(written))
	b.check("session")
	b.do(chromedp.SendKeys("#prompt", "hello console"), chromedp.Submit("#prompt"))
	b.waitFor(`location.pathname.startsWith("/console/turns/turn_")`)

	// Deltas arrive, then the permission question waits to be answered.
	b.waitFor(`document.getElementById("transcript").textContent.includes("hello ")`)
	b.waitFor(`!!document.querySelector("#questions form button[value=approve]")`)
	b.waitFor(`!!document.querySelector('figure[data-machine="run"] [data-id="state-streaming"].aw-current')`)
	b.waitFor(`document.getElementById("turn-state").textContent === "running"`)
	b.check("turn-question")
	b.tabTo("#questions button[value=approve]")
	b.do(chromedp.KeyEvent("\r"))
	b.waitFor(`document.getElementById("transcript").textContent.includes("[perm-1:allowed]")`)
	b.waitFor(`!!document.querySelector('figure[data-machine="interaction"][data-state="applied"]')`)

	// Then a user-choice question, answered by keyboard: Tab to the
	// option, Space picks it, Tab to Answer, Enter.
	b.waitFor(`!!document.querySelector("#questions form input[value=blue]")`)
	b.check("turn-choice")
	b.tabTo("#questions form input[value=blue]")
	b.do(chromedp.KeyEvent(" "))
	b.tabTo("#questions button[value=answer]")
	b.do(chromedp.KeyEvent("\r"))
	b.waitFor(`document.getElementById("transcript").textContent.includes("[ask-1:blue]")`)

	// Then a function call, its result typed and sent by keyboard.
	b.waitFor(`!!document.querySelector("#questions form textarea")`)
	b.check("turn-function")
	b.tabTo("#questions form textarea")
	b.do(chromedp.KeyEvent("42"))
	b.tabTo("#questions form button")
	b.do(chromedp.KeyEvent("\r"))
	b.waitFor(`!document.querySelector("#questions form")`)
	b.waitFor(`[...document.querySelectorAll('figure[data-machine="interaction"]')].filter(f => f.dataset.state === "applied").length === 3`)

	// Active input by keyboard: written, then accepted.
	b.tabTo("#input-text")
	b.do(chromedp.KeyEvent("more please"))
	b.tabTo("#input-form button")
	b.do(chromedp.KeyEvent("\r"))
	b.waitFor(`[...document.querySelectorAll("#inputs li")].some(li => li.dataset.state === "accepted" && li.textContent.includes("more please"))`)
	b.waitFor(`document.getElementById("transcript").textContent.includes("more please")`)

	// The Turn completes and the run machine's diagram shows it.
	b.waitFor(`document.getElementById("turn-state").textContent.startsWith("completed")`)
	b.waitFor(`!!document.querySelector('figure[data-machine="run"][data-state="completed"] [data-id="state-completed"].aw-current')`)
	b.waitFor(`!!document.querySelector('figure[data-machine="run"] [data-id="tr-streaming-completed"].aw-taken')`)
	b.waitFor(`!!document.querySelector('figure[data-machine="input"][data-state="accepted"]')`)
	assert.Contains(t, b.evalString(`document.getElementById("usage").textContent`), "output_tokens")
	b.check("turn-completed")

	// A Turn of the other Runtime, cancelled by keyboard while it runs.
	b.do(chromedp.Navigate(core.base + "/console/"))
	b.waitFor(`!!document.getElementById("agent_kind")`)
	b.do(chromedp.SendKeys("#agent_kind", "hanger"), chromedp.Submit("#agent_kind"))
	b.waitFor(`location.pathname.startsWith("/console/sessions/ses_")`)
	b.do(chromedp.SendKeys("#prompt", "cancel me"), chromedp.Submit("#prompt"))
	b.waitFor(`location.pathname.startsWith("/console/turns/turn_")`)
	b.waitFor(`document.getElementById("transcript").textContent.includes("working")`)
	b.tabTo("#cancel")
	b.do(chromedp.KeyEvent("\r"))
	b.waitFor(`document.getElementById("turn-state").textContent.startsWith("cancelled")`)
	b.waitFor(`!!document.querySelector('figure[data-machine="run"][data-state="cancelled"] [data-id="state-cancelled"].aw-current')`)
	b.check("turn-cancelled")

	// The first Session lists its Turn; the devices page shows the
	// Runtimes connected with every capability of the generated list.
	b.do(chromedp.Navigate(sessionURL))
	b.waitFor(`document.querySelectorAll("#turns-table tbody tr").length === 1`)
	b.check("session-turns")
	b.do(chromedp.Navigate(core.base + "/console/devices"))
	b.waitFor(`document.querySelector("main").textContent.includes("connected")`)
	page := b.evalString(`document.querySelector("main").textContent`)
	assert.Contains(t, page, "dev-1")
	for _, f := range wire.CapabilityFields() {
		assert.Contains(t, page, f.Name)
	}
	b.check("devices")
	b.do(chromedp.Navigate(core.base + "/console/environments"))
	b.waitFor(`document.querySelector("h1").textContent === "Environments"`)
	b.check("environments")

	// Sign out by keyboard: the pages are closed again.
	b.tabTo(".logout button")
	b.do(chromedp.KeyEvent("\r"))
	b.waitFor(`location.pathname === "/console/login"`)
	b.do(chromedp.Navigate(core.base + "/console/devices"))
	b.waitFor(`location.pathname === "/console/login"`)

	for _, s := range []string{proj.Secret, dev.Secret, dev2.Secret} {
		assert.NotContains(t, core.logs.String(), s)
	}
}

// consoleArtifacts is the folder the screenshots go to:
// $AGENTWIRE_ARTIFACTS/console, or a new temporary folder that outlives
// the test; its path is printed either way.
func consoleArtifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("AGENTWIRE_ARTIFACTS")
	if dir == "" {
		var err error
		dir, err = os.MkdirTemp("", "agentwire-artifacts-")
		require.NoError(t, err)
	}
	dir = filepath.Join(dir, "console")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	fmt.Printf("console screenshots: %s\n", dir)
	return dir
}

// consoleBrowser runs the steps of the browser test in one tab.
type consoleBrowser struct {
	t     *testing.T
	ctx   context.Context
	base  string
	axe   string
	shots string
}

func (b *consoleBrowser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	require.NoError(b.t, chromedp.Do(b.ctx, steps...))
}

func (b *consoleBrowser) eval(expr string) any {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[any](expr))
	require.NoError(b.t, err, expr)
	return v
}

// evalAsync awaits the promise expr returns.
func (b *consoleBrowser) evalAsync(expr string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
	require.NoError(b.t, err, expr)
	return v
}

func (b *consoleBrowser) evalString(expr string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	require.NoError(b.t, err, expr)
	return v
}

// waitFor polls a predicate in the page: the browser, the Core and the
// Runtime are real processes, so the test waits for what they show.
// A poll that a navigation interrupts (a form's submission) starts again
// on the new page.
func (b *consoleBrowser) waitFor(predicate string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingInterval(50*time.Millisecond)))
		if err != nil && ctx.Err() == nil && navigationLost(err) {
			continue
		}
		if err != nil {
			text, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
			b.t.Fatalf("waiting for %s: %v\nthe page:\n%s", predicate, err, text)
		}
		return
	}
}

// tabTo presses Tab until the element matching sel has the focus: what a
// keyboard user does to reach it.
func (b *consoleBrowser) tabTo(sel string) {
	b.t.Helper()
	q := fmt.Sprintf(`!!document.activeElement && document.activeElement.matches(%q)`, sel)
	for range 80 {
		if b.eval(q) == true {
			return
		}
		b.do(chromedp.KeyEvent("\t"))
	}
	b.t.Fatalf("Tab never reached %s", sel)
}

// navigationLost reports a protocol error that a page's navigation causes
// (the evaluation's page or context went away), after which the poll is
// started again on the new page.
func navigationLost(err error) bool {
	for _, s := range []string{"navigated or closed", "context was destroyed", "Cannot find context"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}

// axeFinding is one violation axe-core reported.
type axeFinding struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []any  `json:"target"`
		HTML   string `json:"html"`
	} `json:"nodes"`
}

// check runs axe-core on the page (no serious or critical finding is
// allowed; others are logged) and saves a screenshot named name.
func (b *consoleBrowser) check(name string) {
	b.t.Helper()
	if b.eval(`typeof window.axe`) != "object" {
		_, err := chromedp.Run(b.ctx, chromedp.Evaluate[chromedp.Void](b.axe))
		require.NoError(b.t, err, "inject axe-core")
	}
	res, err := chromedp.Run(b.ctx, chromedp.Evaluate[struct {
		Violations []axeFinding `json:"violations"`
		Passes     int          `json:"passes"`
	}](`axe.run(document).then(r => ({violations: r.violations, passes: r.passes.length}))`, chromedp.EvalAwaitPromise))
	require.NoError(b.t, err, "axe on %s", name)
	require.Positive(b.t, res.Passes, "axe checked nothing on %s", name)
	for _, f := range res.Violations {
		msg := fmt.Sprintf("axe %s on %s: %s (%s): %d nodes, first %v %s", f.Impact, name, f.ID, f.Help, len(f.Nodes), f.Nodes[0].Target, f.Nodes[0].HTML)
		if f.Impact == "serious" || f.Impact == "critical" {
			b.t.Error(msg)
		} else {
			b.t.Log(msg)
		}
	}
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	require.NoError(b.t, err)
	require.NoError(b.t, os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644))
	if strings.Contains(name, "/") {
		b.t.Fatalf("screenshot name %q", name)
	}
}
