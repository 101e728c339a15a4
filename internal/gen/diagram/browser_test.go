package diagram

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/spec"
)

// browserDiagram is one diagram sent to browsercheck/render.mjs.
type browserDiagram struct {
	Name   string `json:"name"`
	Source string `json:"source"`
}

// browserResult is what render.mjs saw in the rendered SVG.
type browserResult struct {
	Version  string     `json:"version"`
	Name     string     `json:"name"`
	Error    string     `json:"error"`
	Width    float64    `json:"width"`
	Height   float64    `json:"height"`
	Boxes    [][]string `json:"boxes"`
	Labels   []string   `json:"labels"`
	Overlaps []struct {
		Kind string `json:"kind"`
		A    string `json:"a"`
		B    string `json:"b"`
	} `json:"overlaps"`
}

// TestBrowserRender renders the committed diagrams with the real Mermaid (each
// pinned version) in headless Chromium and checks that every state shows its
// name, that each box reads as the syntax check in `make test` predicts, that
// every arrow label is drawn, and that no picture is wider than maxAspect. It runs only from `make diagrams-browser-check`,
// which installs what it needs and sets the environment.
func TestBrowserRender(t *testing.T) {
	if os.Getenv("AGENTWIRE_BROWSER_CHECK") == "" {
		t.Skip("needs Chromium and the npm packages: run make diagrams-browser-check")
	}
	chromium := os.Getenv("CHROMIUM")
	require.NotEmpty(t, chromium, "CHROMIUM")
	// MERMAID_BUNDLES: "version=path/to/mermaid.min.js ..."
	var bundles []map[string]string
	for _, b := range strings.Fields(os.Getenv("MERMAID_BUNDLES")) {
		version, path, ok := strings.Cut(b, "=")
		require.True(t, ok, "MERMAID_BUNDLES entry %q is not version=path", b)
		require.FileExists(t, path)
		bundles = append(bundles, map[string]string{"version": version, "path": path})
	}
	require.NotEmpty(t, bundles, "MERMAID_BUNDLES")

	// Every committed diagram, each with the machine it must show.
	machines := map[string]*spec.Machine{}
	for _, m := range specMachines(t) {
		machines[m.Name] = m
	}
	var diagrams []browserDiagram
	want := map[string]*spec.Machine{}
	add := func(name, source string, m *spec.Machine) {
		diagrams = append(diagrams, browserDiagram{Name: name, Source: source})
		want[name] = m
	}
	files, err := filepath.Glob("../../../docs/machines/*.mmd")
	require.NoError(t, err)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".mmd")
		m, ok := machines[name]
		require.True(t, ok, "%s has no machine in spec/", f)
		delete(machines, name)
		mmd, err := os.ReadFile(f)
		require.NoError(t, err)
		page, err := os.ReadFile(strings.TrimSuffix(f, ".mmd") + ".md")
		require.NoError(t, err)
		add(name+".mmd", string(mmd), m)
		add(name+".md", pageMermaid(t, page), m)
	}
	require.Empty(t, machines, "machines without a docs/machines/<name>.mmd; run make generate")
	lease, err := os.ReadFile("testdata/golden/lease.mmd")
	require.NoError(t, err)
	add("golden lease.mmd", string(lease), loadLease(t))

	request, err := json.Marshal(map[string]any{"chromium": chromium, "mermaid": bundles, "diagrams": diagrams})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "browsercheck/render.mjs")
	cmd.Stdin = bytes.NewReader(request)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "render.mjs: %s", stderr.String())

	var reply struct {
		Browser string          `json:"browser"`
		Results []browserResult `json:"results"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &reply), "render.mjs output: %.500s", stdout.String())
	require.Len(t, reply.Results, len(diagrams)*len(bundles))
	t.Logf("%s", reply.Browser)

	for i, r := range reply.Results {
		m, source := want[r.Name], diagrams[i%len(diagrams)].Source
		t.Run("mermaid "+r.Version+"/"+r.Name, func(t *testing.T) {
			require.Empty(t, r.Error, "Mermaid %s could not render %s", r.Version, r.Name)
			require.Positive(t, r.Height)
			aspect := r.Width / r.Height
			t.Logf("mermaid %-7s %-20s %s %4.0f x %4.0f px  %.2f:1  %d overlaps %v",
				r.Version, r.Name, layoutOf(m).mermaid, r.Width, r.Height, aspect, len(r.Overlaps), r.Overlaps)
			// Mermaid 10 lays state diagrams out with its older renderer,
			// in which preparation stays about 2.75:1 wide whichever way it
			// runs: its ratios are reported, not bounded.
			if !strings.HasPrefix(r.Version, "10.") {
				assert.LessOrEqual(t, aspect, maxAspect, "%s renders %.2f:1 wide: choose its direction in layouts", r.Name, aspect)
			}

			// What the syntax check predicts each box shows.
			parsed, err := parseMermaid(source)
			require.NoError(t, err)
			predicted := map[string][]string{}
			for _, st := range parsed.states {
				lines := st.lines()
				predicted[lines[0]] = lines
			}

			shown := map[string][]string{}
			for _, box := range r.Boxes {
				_, dup := shown[box[0]]
				assert.False(t, dup, "two boxes read %q", box[0])
				shown[box[0]] = box
			}
			for _, s := range m.States {
				box, ok := shown[s.Name]
				if assert.True(t, ok, "no box shows state %q; boxes: %q", s.Name, r.Boxes) {
					assert.Equal(t, predicted[s.Name], box, "box of %q differs from what the syntax check predicts", s.Name)
				}
				delete(shown, s.Name)
			}
			assert.Empty(t, shown, "boxes that are no state of %s", m.Name)

			// Every labelled arrow carries its label.
			var labels []string
			for _, tr := range parsed.transitions {
				if tr.label != nil {
					labels = append(labels, strings.Join(tr.label, " / "))
				}
			}
			slices.Sort(labels)
			drawn := slices.Clone(r.Labels)
			slices.Sort(drawn)
			assert.Equal(t, labels, drawn, "arrow labels")
		})
	}
}
