package execution

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentwire/agentwire/internal/runtime/bounded"
	"github.com/agentwire/agentwire/internal/runtime/workspace"
	"github.com/agentwire/agentwire/wire"
)

// Bindings are the Environments this Runtime serves, each a Core-minted
// Environment ID bound to its own workspace directory (the daemon's
// --environment ID=DIR flags). Every workspace operation, runtime_prepare
// file install and local execution uses the workspace of the Environment
// it names; an Environment the daemon is not configured with is refused
// before any work (daemon-protocol.txt:19: a valid credential and
// connection are never authority to choose another Environment binding;
// :155: an invalid binding is rejected before the operation starts).
//
// Add every binding before the daemon runs; afterwards Bindings is only
// read, and its methods are safe for concurrent use. A nil *Bindings binds
// nothing: every Environment is unknown.
type Bindings struct {
	byID map[string]*bound
}

// bound is one Environment's workspace.
type bound struct {
	dir string // the absolute directory, symbolic links resolved
	ws  *workspace.Workspace
}

// NewBindings returns an empty set of bindings.
func NewBindings() *Bindings { return &Bindings{byID: map[string]*bound{}} }

// Add binds the Environment env to the existing directory dir.
//
// env must be a canonical UUID (the Environment ID Core minted); it may be
// bound once. dir must be an existing directory, and it may not be the
// directory of another Environment, nor lie inside one or contain one.
//
// decision: two Environments in one directory, or one nested in the
// other's, would let a write, an install or a Turn of one reach the files
// of the other, which defeats the binding the protocol makes exact
// (daemon-protocol.txt:19, :59: the Runtime checks the workspace against
// its binding); such a configuration is refused at startup rather than
// served.
func (b *Bindings) Add(env, dir string) error {
	if b == nil || b.byID == nil {
		return errors.New("execution: bindings: not made with NewBindings")
	}
	if !wire.IsCanonicalUUID(env) {
		return fmt.Errorf("execution: environment %q: not a canonical Environment ID (a lower-case UUID that Core minted)", bounded.Text(env, 64))
	}
	if _, dup := b.byID[env]; dup {
		return fmt.Errorf("execution: environment %s: bound twice (each Environment has one workspace)", env)
	}
	if dir == "" {
		return fmt.Errorf("execution: environment %s: no directory", env)
	}
	abs, err := resolveDir(dir)
	if err != nil {
		return fmt.Errorf("execution: environment %s: %w", env, err)
	}
	for other, o := range b.byID {
		if rel := overlap(o.dir, abs); rel != "" {
			return fmt.Errorf("execution: environment %s: directory %s %s the directory of environment %s (%s); two Environments never share files",
				env, abs, rel, other, o.dir)
		}
	}
	ws, err := workspace.Open(abs)
	if err != nil {
		return fmt.Errorf("execution: environment %s: %w", env, err)
	}
	b.byID[env] = &bound{dir: abs, ws: ws}
	return nil
}

// resolveDir is dir as an absolute path with its symbolic links resolved,
// once it is known to be an existing directory.
func resolveDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("directory %s: %w", dir, err)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("directory %s: %w", dir, unwrapPath(err))
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return "", fmt.Errorf("directory %s: %w", dir, unwrapPath(err))
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("directory %s: not a directory", dir)
	}
	return resolved, nil
}

// unwrapPath drops the path a *PathError repeats.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// overlap says how b relates to a when one contains the other ("is",
// "lies inside", "contains"), or "" when they are apart.
func overlap(a, b string) string {
	if a == b {
		return "is"
	}
	if within(a, b) {
		return "lies inside"
	}
	if within(b, a) {
		return "contains"
	}
	if fa, err := os.Stat(a); err == nil {
		if fb, err := os.Stat(b); err == nil && os.SameFile(fa, fb) {
			return "is"
		}
	}
	return ""
}

// within reports whether path lies strictly inside dir.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// Lookup returns the workspace of env, or false when env is not bound here.
func (b *Bindings) Lookup(env string) (*workspace.Workspace, bool) {
	if b == nil || env == "" {
		return nil, false
	}
	o, ok := b.byID[env]
	if !ok {
		return nil, false
	}
	return o.ws, true
}

// Dir is the absolute directory env is bound to, or "" when it is not bound.
func (b *Bindings) Dir(env string) string {
	if b == nil {
		return ""
	}
	if o, ok := b.byID[env]; ok {
		return o.dir
	}
	return ""
}

// Has reports whether env is bound here.
func (b *Bindings) Has(env string) bool {
	_, ok := b.Lookup(env)
	return ok
}

// IDs lists the bound Environment IDs, sorted.
func (b *Bindings) IDs() []string {
	if b == nil {
		return nil
	}
	out := make([]string, 0, len(b.byID))
	for id := range b.byID {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Len is the number of bound Environments.
func (b *Bindings) Len() int {
	if b == nil {
		return 0
	}
	return len(b.byID)
}

// Close releases every bound directory.
func (b *Bindings) Close() error {
	if b == nil {
		return nil
	}
	var errs []error
	for id, o := range b.byID {
		if err := o.ws.Close(); err != nil {
			errs = append(errs, fmt.Errorf("execution: closing environment %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}
