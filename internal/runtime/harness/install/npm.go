package install

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Options configures Install.
type Options struct {
	// Dir is the install directory; "" means Dir().
	Dir string
	// Harnesses are the packages to install; nil means Harnesses().
	Harnesses []Harness
	// NPM is the npm command; "" means "npm" on PATH.
	NPM string
	// Force runs npm install even when everything is up to date.
	Force bool
	// Out receives the progress and the summary; nil discards it. npm's
	// own output goes to Out too.
	Out io.Writer
}

// Result is what Install did.
type Result struct {
	Dir string
	// Installed is false when everything was already up to date and npm
	// did not run.
	Installed bool
	Found     []Found
	// Bytes is the size of Dir/node_modules (counted after an install).
	Bytes   int64
	Elapsed time.Duration
}

// manifestName is the package.json Install writes; npm keeps its
// package-lock.json beside it, in the install directory.
const manifestName = "package.json"

// Manifest is the package.json for hs: every package at its exact version.
func Manifest(hs []Harness) []byte {
	deps := make(map[string]string, len(hs))
	for _, h := range hs {
		deps[h.Package] = h.Version
	}
	m := struct {
		Name         string            `json:"name"`
		Description  string            `json:"description"`
		Private      bool              `json:"private"`
		Dependencies map[string]string `json:"dependencies"`
	}{
		Name:         "agentwire-harnesses",
		Description:  "Written by make harnesses (go run ./cmd/agentwire-harnesses install); edit runtime/harness/install instead.",
		Private:      true,
		Dependencies: deps,
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		panic(err) // a struct of strings always marshals
	}
	return append(b, '\n')
}

// Install makes the pinned packages present in the install directory. When
// its package.json already pins them and every binary answers `--version`
// with its pin, it runs no npm at all; otherwise it writes package.json and
// runs `npm install --no-fund --no-audit --prefix DIR`, then checks every
// binary. A changed pin therefore reinstalls that package.
func Install(ctx context.Context, o Options) (Result, error) {
	start := time.Now()
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	hs := o.Harnesses
	if hs == nil {
		hs = Harnesses()
	}
	dir := o.Dir
	if dir == "" {
		d, err := Dir()
		if err != nil {
			return Result{}, err
		}
		dir = d
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Result{}, err
	}
	res := Result{Dir: dir}
	manifest := Manifest(hs)
	manifestPath := filepath.Join(dir, manifestName)

	if !o.Force {
		if cur, err := os.ReadFile(manifestPath); err == nil && bytes.Equal(cur, manifest) {
			if found, err := findAll(hs, dir); err == nil {
				res.Found = found
				res.Elapsed = time.Since(start)
				fmt.Fprintf(out, "harnesses: up to date in %s\n", dir)
				return res, nil
			}
		}
	}

	npm := o.NPM
	if npm == "" {
		p, err := exec.LookPath("npm")
		if err != nil {
			return res, errors.New("harnesses: npm not found on PATH: install node and npm (Debian: apt-get install -y nodejs npm)")
		}
		npm = p
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, fmt.Errorf("harnesses: %w", err)
	}
	if err := os.WriteFile(manifestPath, manifest, 0o644); err != nil {
		return res, fmt.Errorf("harnesses: %w", err)
	}
	var pins []string
	for _, h := range hs {
		pins = append(pins, h.Package+"@"+h.Version)
	}
	fmt.Fprintf(out, "harnesses: installing %s into %s\n", strings.Join(pins, " "), dir)
	args := []string{"install", "--no-fund", "--no-audit", "--prefix", dir}
	fmt.Fprintf(out, "harnesses: %s %s\n", filepath.Base(npm), strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Dir = dir
	// No "new npm version available" check: one request less, and no
	// notice in a CI log.
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return res, fmt.Errorf("harnesses: npm install failed: %w", err)
	}
	res.Installed = true
	found, err := findAll(hs, dir)
	res.Found = found
	if err != nil {
		return res, err
	}
	res.Bytes = dirSize(filepath.Join(dir, "node_modules"))
	res.Elapsed = time.Since(start)
	return res, nil
}

func findAll(hs []Harness, dir string) ([]Found, error) {
	var found []Found
	var errs []error
	for _, h := range hs {
		f, _, err := FindIn(h, dir)
		if err != nil {
			errs = append(errs, explain(h, dir, f, err))
			continue
		}
		found = append(found, f)
	}
	return found, errors.Join(errs...)
}

// explain turns a failed lookup after an install into the message a person
// needs.
func explain(h Harness, dir string, f Found, err error) error {
	var nf *NotInstalledError
	if !errors.As(err, &nf) {
		return err
	}
	msg := fmt.Sprintf("harnesses: %s@%s installed into %s, but no working %s binary was found:\n  %s",
		h.Package, h.Version, dir, h.Name, strings.Join(nf.Tried, "\n  "))
	if f.SkippedStub != "" {
		msg += fmt.Sprintf("\n%s is the package's placeholder and the platform package's native binary is missing too:"+
			"\nnpm did not install the optional platform dependency (--omit=optional?). Reinstall with"+
			"\n  go run ./cmd/agentwire-harnesses install --force", f.SkippedStub)
	}
	return errors.New(msg)
}

func dirSize(root string) int64 {
	var n int64
	seen := map[[2]uint64]bool{}
	_ = filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil || !info.Mode().IsRegular() {
			return nil
		}
		if id, ok := fileID(info); ok {
			if seen[id] {
				return nil // a hard link already counted (Claude's binary)
			}
			seen[id] = true
		}
		n += info.Size()
		return nil
	})
	return n
}
