// Package apisurface keeps agentwire's exported Go API visible in review.
//
// The module's public packages (every package whose import path has no
// "internal" element and is not under cmd/ or examples/) are what embedders
// compile against, so a change to them is a change to a contract. This package
// computes that exported surface, one line per exported identifier, and its
// test compares it with the golden file api/surface.txt at the repository
// root. A pull request that changes the public API therefore also changes
// api/surface.txt, and the reviewer sees the API change as a plain diff even
// when it hides in a generated file or a signature deep in a long change.
//
// After an intended API change, rewrite the golden with
//
//	go test ./internal/apisurface -update
//
// and commit api/surface.txt with the change.
//
// What a line holds (types are qualified by package name, not full path, so
// lines stay short; the package's own types are unqualified):
//
//	core: func New(cfg Config) (*Core, error)
//	core: type Config struct
//	core: field Config.Store store.Store
//	core: method (*Core) Close() error
//	core: const X untyped int = 3
//	core: var DefaultGenerated map[string]string
//
// Exported fields of exported structs are listed with their struct tags,
// because a tag is the JSON wire name. Methods are the full method set of the
// exported type, promoted ones included (marked "(promoted)"): an embedder can
// call them, so a change to an embedded type is an API change of the outer
// one. A method's receiver is (*T) when only the pointer has it. Promoted
// fields are not listed (the embedded field itself is). Constant values are
// part of the line because embedders may switch on them. Doc comments are not
// part of the surface: the surface is read from compiler export data, which
// has none, so a doc edit never changes the golden.
//
// The test also checks that no exported identifier of a public package
// mentions a type from an internal package: an embedder cannot name such a
// type, so it cannot declare a variable of it, implement an interface that
// uses it, or write a fake for it. The known offenders are listed in
// api/internal-leaks.txt; that list may only shrink. A new leak fails the
// test, and so does an entry that no longer leaks (run -update, which only
// ever removes entries from that file, or delete the line by hand).
//
// The surface is computed from the export data `go list -export` produces
// rather than by type-checking the sources: the public packages import
// modernc.org/sqlite, and type-checking that from source takes far longer
// than reading the build cache the test run has filled already.
package apisurface

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/constant"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Line is one exported identifier of a public package.
type Line struct {
	// Pkg is the package path relative to the module root ("core/store").
	Pkg string
	// Ident names the identifier without its type ("field Config.Store",
	// "method (*Core) Close"); leak entries are keyed by it so that an
	// unrelated edit of a leaking signature does not touch the allow-list.
	Ident string
	// Text is the full line after the package prefix.
	Text string
	// Internal lists the internal types the line mentions, as
	// "path/relative/to/module.Name", sorted.
	Internal []string
	// Aliases is the internal type an alias line names
	// ("path/relative/to/module.Name"); "" for any other line.
	Aliases string

	sortKey string
}

// String is the line as it appears in api/surface.txt.
func (l Line) String() string { return l.Pkg + ": " + l.Text }

// Leaks are the allow-list entries of the line, one per internal type.
func (l Line) Leaks() []string {
	out := make([]string, 0, len(l.Internal))
	for _, t := range l.Internal {
		out = append(out, l.Pkg+": "+l.Ident+" mentions "+t)
	}
	return out
}

// Options tune how the go command is run.
type Options struct {
	// Dir is the module root; go list runs there.
	Dir string
	// BuildFlags go to go list (e.g. -race), so the export data comes from
	// the same build-cache entries the running test binary was built from.
	BuildFlags []string
}

type listedPackage struct {
	ImportPath string
	Export     string
	Module     *struct{ Path string }
	Error      *struct{ Err string }
}

// PublicPackages lists the module's public import paths, sorted.
func PublicPackages(opts Options) (modulePath string, paths []string, err error) {
	out, err := goCmd(opts.Dir, "list", "-m")
	if err != nil {
		return "", nil, err
	}
	modulePath = strings.TrimSpace(string(out))
	out, err = goCmd(opts.Dir, "list", "./...")
	if err != nil {
		return "", nil, err
	}
	for _, p := range strings.Fields(string(out)) {
		if isPublic(modulePath, p) {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return modulePath, paths, nil
}

func isPublic(modulePath, path string) bool {
	rel, ok := relPath(modulePath, path)
	if !ok {
		return false
	}
	if rel == "cmd" || strings.HasPrefix(rel, "cmd/") || rel == "examples" || strings.HasPrefix(rel, "examples/") {
		return false
	}
	return !isInternal(path)
}

// isInternal reports whether code outside the module cannot import path.
func isInternal(path string) bool {
	return slices.Contains(strings.Split(path, "/"), "internal")
}

func relPath(modulePath, path string) (string, bool) {
	if path == modulePath {
		return ".", true
	}
	rel, ok := strings.CutPrefix(path, modulePath+"/")
	return rel, ok
}

// Compute returns the exported surface of every public package, packages in
// path order and lines sorted within each package.
func Compute(opts Options) ([]Line, error) {
	modulePath, paths, err := PublicPackages(opts)
	if err != nil {
		return nil, err
	}
	args := append([]string{"list", "-export", "-json=ImportPath,Export,Module,Error"}, opts.BuildFlags...)
	out, err := goCmd(opts.Dir, append(args, paths...)...)
	if err != nil {
		return nil, err
	}
	exports := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decode go list output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("go list %s: %s", p.ImportPath, p.Error.Err)
		}
		if p.Export == "" {
			return nil, fmt.Errorf("go list %s: no export data", p.ImportPath)
		}
		exports[p.ImportPath] = p.Export
	}
	// The gc importer reads each package's export data, which carries every
	// declaration from its dependencies that its API refers to, so only the
	// public packages themselves need a file.
	lookup := func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", lookup)
	var lines []Line
	for _, path := range paths {
		pkg, err := imp.Import(path)
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", path, err)
		}
		rel, _ := relPath(modulePath, path)
		lines = append(lines, packageSurface(modulePath, rel, pkg)...)
	}
	// An internal type some public package aliases can be named by an
	// embedder (through the alias), so mentioning it is no leak.
	named := map[string]bool{}
	for _, l := range lines {
		if l.Aliases != "" {
			named[l.Aliases] = true
		}
	}
	for i := range lines {
		lines[i].Internal = slices.DeleteFunc(lines[i].Internal, func(t string) bool { return named[t] })
	}
	return lines, nil
}

func goCmd(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// surfaceWriter builds the lines of one package.
type surfaceWriter struct {
	modulePath string
	rel        string
	pkg        *types.Package
	lines      []Line
}

func packageSurface(modulePath, rel string, pkg *types.Package) []Line {
	w := &surfaceWriter{modulePath: modulePath, rel: rel, pkg: pkg}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Const:
			text := "const " + name + " " + w.typeString(obj.Type())
			if obj.Val().Kind() != constant.Unknown {
				text += " = " + obj.Val().ExactString()
			}
			w.add(name, 0, "", "const "+name, text, obj.Type())
		case *types.Var:
			w.add(name, 0, "", "var "+name, "var "+name+" "+w.typeString(obj.Type()), obj.Type())
		case *types.Func:
			sig := obj.Type().(*types.Signature)
			w.add(name, 0, "", "func "+name, "func "+name+w.signature(sig), sig)
		case *types.TypeName:
			w.typeName(obj)
		}
	}
	slices.SortFunc(w.lines, func(a, b Line) int { return strings.Compare(a.sortKey, b.sortKey) })
	return w.lines
}

// add records one line. The sort key keeps a type, its fields and its
// methods together in the golden (name, then kind, then member) instead of
// scattering them by the line's first word.
func (w *surfaceWriter) add(name string, kind int, member, ident, text string, mentions ...types.Type) {
	var internal []string
	seen := map[string]bool{}
	for _, t := range mentions {
		w.internalTypes(t, seen, &internal)
	}
	slices.Sort(internal)
	w.lines = append(w.lines, Line{
		Pkg:      w.rel,
		Ident:    ident,
		Text:     text,
		Internal: internal,
		sortKey:  fmt.Sprintf("%s\x00%d\x00%s\x00%s", name, kind, member, text),
	})
}

const (
	kindDecl = iota
	kindField
	kindMethod
)

func (w *surfaceWriter) typeName(obj *types.TypeName) {
	name := obj.Name()
	if obj.IsAlias() {
		// obj.Type() is the alias itself, which prints as its own name.
		rhs := obj.Type()
		if a, ok := rhs.(*types.Alias); ok {
			rhs = a.Rhs()
		}
		named, ok := types.Unalias(rhs).(*types.Named)
		if !ok || named.Obj().Pkg() == nil || !isInternal(named.Obj().Pkg().Path()) {
			w.add(name, kindDecl, "", "type "+name, "type "+name+" = "+w.typeString(rhs), rhs)
			return
		}
		// An alias is how a public package lets embedders name an internal
		// type, so the alias itself is no leak (its type arguments may be).
		// It makes that type's fields and methods public under the alias's
		// name, so they are part of the surface even though they are
		// declared in an internal package.
		var args []types.Type
		for a := range named.TypeArgs().Types() {
			args = append(args, a)
		}
		w.add(name, kindDecl, "", "type "+name, "type "+name+" = "+w.typeString(rhs), args...)
		p := named.Obj().Pkg().Path()
		if r, ok := relPath(w.modulePath, p); ok {
			p = r
		}
		w.lines[len(w.lines)-1].Aliases = p + "." + named.Obj().Name()
		w.members(name, name, named)
		return
	}
	named, ok := obj.Type().(*types.Named)
	if !ok {
		return
	}
	decl := "type " + name + w.typeParams(named.TypeParams(), true) + " "
	// The declaration line checks what no field or method line does: the
	// type parameters' constraints and a non-struct underlying type.
	var mentions []types.Type
	for tp := range named.TypeParams().TypeParams() {
		mentions = append(mentions, tp.Constraint())
	}
	switch u := named.Underlying().(type) {
	case *types.Struct:
		decl += "struct"
	case *types.Interface:
		if u.IsMethodSet() {
			decl += "interface"
		} else {
			decl += w.typeString(u)
			mentions = append(mentions, u)
		}
	default:
		decl += w.typeString(u)
		mentions = append(mentions, u)
	}
	w.add(name, kindDecl, "", "type "+name, decl, mentions...)
	w.members(name, name+w.typeParams(named.TypeParams(), false), named)
}

// members adds the exported fields and methods of named, listed under the
// exported type name (recv is that name with its type parameters).
func (w *surfaceWriter) members(name, recv string, named *types.Named) {
	if st, ok := named.Underlying().(*types.Struct); ok {
		for i := range st.NumFields() {
			f := st.Field(i)
			if !f.Exported() {
				continue
			}
			text := "field " + name + "." + f.Name() + " " + w.typeString(f.Type())
			if f.Embedded() {
				text += " (embedded)"
			}
			if tag := st.Tag(i); tag != "" {
				text += " `" + tag + "`"
			}
			w.add(name, kindField, f.Name(), "field "+name+"."+f.Name(), text, f.Type())
		}
	}
	var T types.Type = named
	_, isInterface := named.Underlying().(*types.Interface)
	valueSet := types.NewMethodSet(T)
	ptrSet := valueSet
	if !isInterface {
		ptrSet = types.NewMethodSet(types.NewPointer(T))
	}
	for sel := range ptrSet.Methods() {
		m := sel.Obj().(*types.Func)
		if !m.Exported() {
			continue
		}
		r := "(" + recv + ")"
		if valueSet.Lookup(m.Pkg(), m.Name()) == nil {
			r = "(*" + recv + ")"
		}
		sig := sel.Type().(*types.Signature)
		ident := "method " + r + " " + m.Name()
		text := ident + w.signature(sig)
		if len(sel.Index()) > 1 {
			text += " (promoted)"
		}
		w.add(name, kindMethod, m.Name(), ident, text, sig)
	}
}

// qualifier writes other packages by name and this package not at all: the
// golden is read by people, and full import paths would triple its width.
func (w *surfaceWriter) qualifier(p *types.Package) string {
	if p == w.pkg {
		return ""
	}
	return p.Name()
}

func (w *surfaceWriter) typeString(t types.Type) string {
	return types.TypeString(t, w.qualifier)
}

// signature is a signature without the func keyword or receiver:
// "[T any](ctx context.Context, x T) error".
func (w *surfaceWriter) signature(sig *types.Signature) string {
	var buf bytes.Buffer
	types.WriteSignature(&buf, sig, w.qualifier)
	return buf.String()
}

// typeParams is "[K comparable, V any]" (withConstraints) or "[K, V]".
func (w *surfaceWriter) typeParams(list *types.TypeParamList, withConstraints bool) string {
	if list.Len() == 0 {
		return ""
	}
	parts := make([]string, 0, list.Len())
	for tp := range list.TypeParams() {
		s := tp.Obj().Name()
		if withConstraints {
			s += " " + w.typeString(tp.Constraint())
		}
		parts = append(parts, s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// internalTypes collects the types from internal packages that t mentions.
// It stops at named types of public packages: their own lines are checked.
func (w *surfaceWriter) internalTypes(t types.Type, seen map[string]bool, out *[]string) {
	record := func(obj *types.TypeName) bool {
		if obj.Pkg() == nil || !isInternal(obj.Pkg().Path()) {
			return false
		}
		p := obj.Pkg().Path()
		if rel, ok := relPath(w.modulePath, p); ok {
			p = rel
		}
		key := p + "." + obj.Name()
		if !seen[key] {
			seen[key] = true
			*out = append(*out, key)
		}
		return true
	}
	walk := func(t types.Type) { w.internalTypes(t, seen, out) }
	switch t := t.(type) {
	case *types.Alias:
		if !record(t.Obj()) {
			for a := range t.TypeArgs().Types() {
				walk(a)
			}
		}
	case *types.Named:
		record(t.Obj())
		for a := range t.TypeArgs().Types() {
			walk(a)
		}
	case *types.Pointer:
		walk(t.Elem())
	case *types.Slice:
		walk(t.Elem())
	case *types.Array:
		walk(t.Elem())
	case *types.Chan:
		walk(t.Elem())
	case *types.Map:
		walk(t.Key())
		walk(t.Elem())
	case *types.Tuple:
		for v := range t.Variables() {
			walk(v.Type())
		}
	case *types.Signature:
		for tp := range t.TypeParams().TypeParams() {
			walk(tp.Constraint())
		}
		walk(t.Params())
		walk(t.Results())
	case *types.Struct:
		for f := range t.Fields() {
			if f.Exported() {
				walk(f.Type())
			}
		}
	case *types.Interface:
		for i := range t.NumEmbeddeds() {
			walk(t.EmbeddedType(i))
		}
		for m := range t.ExplicitMethods() {
			if m.Exported() {
				walk(m.Type())
			}
		}
	case *types.Union:
		for i := range t.Len() {
			walk(t.Term(i).Type())
		}
	}
}

// ModuleRoot is the directory holding go.mod for the current directory.
func ModuleRoot() (string, error) {
	out, err := goCmd("", "env", "GOMOD")
	if err != nil {
		return "", err
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside a module")
	}
	return filepath.Dir(gomod), nil
}
