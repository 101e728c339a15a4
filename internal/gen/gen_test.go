package gen

import (
	"context"
	"flag"
	svgrender "github.com/agentwire/agentwire/internal/gen/diagram/render"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/spec"
)

var update = flag.Bool("update", false, "rewrite gen/testdata/*/golden from the generator's output")

// loadCase loads gen/testdata/<name>/spec with file names as the generated
// headers will show them.
func loadCase(t *testing.T, name string) *spec.Model {
	t.Helper()
	dir := filepath.Join("testdata", name, "spec")
	model, err := spec.LoadDir(os.DirFS(dir), ".", "spec")
	require.NoError(t, err)
	return model
}

// TestGolden compares every generated file with gen/testdata/<case>/golden.
// After an intended change to the generator, run
//
//	go test ./gen -run TestGolden -update
//
// and read the diff of the golden files before committing it.
func TestGolden(t *testing.T) {
	// Each case keeps goldens only for what it is there to cover, so no
	// output is pinned twice: "wire" reuses the door machine of "basic".
	cases := map[string][]string{
		"basic": {"fsm/", "docs/machines/"},
		"wire":  {"wire/", "docs/wire/"},
		// A machine with no guard, action, timer or message.
		"bare": {"fsm/lamp/lamp.go"},
	}
	for name, prefixes := range cases {
		t.Run(name, func(t *testing.T) {
			all, err := Generate(context.Background(), loadCase(t, name), Config{SVG: svgrender.SVG})
			require.NoError(t, err)
			files := Files{}
			for p, content := range all {
				for _, prefix := range prefixes {
					if strings.HasPrefix(p, prefix) {
						files[p] = content
					}
				}
			}
			golden := filepath.Join("testdata", name, "golden")
			if *update {
				require.NoError(t, os.RemoveAll(golden))
				for p, content := range files {
					dst := filepath.Join(golden, filepath.FromSlash(p))
					require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
					require.NoError(t, os.WriteFile(dst, content, 0o644))
				}
			}
			var want []string
			require.NoError(t, filepath.WalkDir(golden, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, err := filepath.Rel(golden, p)
				want = append(want, filepath.ToSlash(rel))
				return err
			}))
			require.ElementsMatch(t, want, files.Paths(), "the set of generated files changed; rerun with -update if intended")
			for _, p := range files.Paths() {
				content, err := os.ReadFile(filepath.Join(golden, filepath.FromSlash(p)))
				require.NoError(t, err)
				require.Equal(t, string(content), string(files[p]), "%s differs from its golden file; rerun with -update if intended", p)
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	model := loadCase(t, "basic")
	a, err := Generate(context.Background(), model, Config{SkipSVG: true})
	require.NoError(t, err)
	b, err := Generate(context.Background(), loadCase(t, "basic"), Config{SkipSVG: true})
	require.NoError(t, err)
	require.Equal(t, a, b)
	for _, p := range a.Paths() {
		require.True(t, IsGenerated(a[p]), "%s lacks the generated-code header", p)
	}
}

// TestNoEmptyEnums checks that a machine without guards, actions, timers
// or messages gets none of those types, nor anything that names them.
func TestNoEmptyEnums(t *testing.T) {
	files, err := Generate(context.Background(), loadCase(t, "bare"), Config{SkipSVG: true})
	require.NoError(t, err)
	src := string(files["fsm/lamp/lamp.go"])
	require.Contains(t, src, "type State uint8")
	require.Contains(t, src, "type Event uint8")
	for _, gone := range []string{"Guard", "Action", "Timer", "Message"} {
		require.NotContains(t, src, "type "+gone+" ")
		require.NotContains(t, src, gone+"(", "a method or conversion of the missing %s type", gone)
	}
	require.NotContains(t, src, "func (s GuardSet) With")
}

// TestEndToEnd generates the basic case into a fresh module that depends on
// this repository, then builds and runs the generated tests there: the
// output must compile on its own and its tests must pass.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a separate module")
	}
	goBin, err := exec.LookPath("go")
	require.NoError(t, err)
	repo, err := filepath.Abs("../..")
	require.NoError(t, err)

	// basic uses every feature; bare uses none (no guard, action, timer or
	// message), so the enums it leaves out must not be referred to.
	mod := t.TempDir()
	for _, name := range []string{"basic", "bare"} {
		files, err := Generate(context.Background(), loadCase(t, name), Config{SkipSVG: true, Module: "example.com/e2e"})
		require.NoError(t, err)
		for p, content := range files {
			if !strings.HasPrefix(p, "fsm/") {
				continue
			}
			dst := filepath.Join(mod, filepath.FromSlash(p))
			require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
			require.NoError(t, os.WriteFile(dst, content, 0o644))
		}
		require.NoError(t, os.CopyFS(filepath.Join(mod, "spec"), os.DirFS(filepath.Join("testdata", name, "spec"))))
	}
	// The new module needs exactly this repository's dependency versions,
	// so it starts from a copy of its go.mod.
	repoMod, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	require.NoError(t, err)
	gomod := strings.Replace(string(repoMod), "module github.com/agentwire/agentwire", "module example.com/e2e", 1) +
		"\nrequire github.com/agentwire/agentwire v0.0.0\n\nreplace github.com/agentwire/agentwire => " + repo + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644))
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.sum"), sum, 0o644))

	run := func(args ...string) {
		cmd := exec.Command(goBin, args...)
		cmd.Dir = mod
		// Everything the module needs is already in the module cache; never
		// reach for the network from a test.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
	}
	run("vet", "./...")
	run("test", "-count=1", "./...")
}
