package wire

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// locate finds where data first disagrees with Go type t: a member t does
// not define, or a value whose JSON kind t cannot hold. encoding/json
// reports neither with its array indices or nesting, so on the (rare) error
// path decodeStrict walks the document again to name the exact field, e.g.
// "configuration.input[0].content[2].kind".
func locate(data []byte, t reflect.Type) (path string, rule Rule, found bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	l := &locator{dec: dec}
	l.value(t, "")
	return l.path, l.rule, l.found
}

type locator struct {
	dec   *json.Decoder
	path  string
	rule  Rule
	found bool
	depth int
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
)

// opaque types decode themselves or take any JSON: the walk skips them.
func opaque(t reflect.Type) bool {
	if t == rawMessageType || t.Kind() == reflect.Interface {
		return true
	}
	return t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) ||
		(t.Kind() != reflect.String && (t.Implements(textUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType)))
}

func (l *locator) report(path string, rule Rule) {
	if !l.found {
		l.path, l.rule, l.found = path, rule, true
	}
}

// value consumes one JSON value, checking it against t.
func (l *locator) value(t reflect.Type, path string) {
	if l.found || l.depth > 10000 {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if opaque(t) {
		var skip json.RawMessage
		if err := l.dec.Decode(&skip); err != nil {
			l.report(path, RuleSyntax)
		}
		return
	}
	tok, err := l.dec.Token()
	if err != nil {
		l.report(path, RuleSyntax)
		return
	}
	l.depth++
	defer func() { l.depth-- }()
	switch v := tok.(type) {
	case nil:
		// null is accepted by every Go type
	case bool:
		if t.Kind() != reflect.Bool {
			l.report(path, RuleType)
		}
	case json.Number:
		switch t.Kind() {
		case reflect.Float32, reflect.Float64:
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			if _, err := strconv.ParseInt(string(v), 10, t.Bits()); err != nil {
				l.report(path, RuleType)
			}
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if _, err := strconv.ParseUint(string(v), 10, t.Bits()); err != nil {
				l.report(path, RuleType)
			}
		default:
			l.report(path, RuleType)
		}
	case string:
		if t.Kind() != reflect.String && !(t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8) {
			l.report(path, RuleType)
		}
	case json.Delim:
		switch v {
		case '{':
			l.object(t, path)
		case '[':
			l.array(t, path)
		}
	}
}

func (l *locator) object(t reflect.Type, path string) {
	fields := map[string]reflect.Type{}
	switch t.Kind() {
	case reflect.Struct:
		collectFields(t, fields)
	case reflect.Map:
	default:
		l.report(path, RuleType)
	}
	for l.dec.More() && !l.found {
		tok, err := l.dec.Token()
		if err != nil {
			l.report(path, RuleSyntax)
			return
		}
		name, _ := tok.(string)
		sub := join(path, cutName(name))
		var ft reflect.Type
		switch t.Kind() {
		case reflect.Struct:
			ft = fields[name]
			if ft == nil {
				l.report(sub, RuleUnknownField)
				return
			}
		case reflect.Map:
			ft = t.Elem()
		default:
			ft = reflect.TypeFor[any]()
		}
		l.value(ft, sub)
	}
	if !l.found {
		_, _ = l.dec.Token() // '}'
	}
}

func (l *locator) array(t reflect.Type, path string) {
	elem := reflect.TypeFor[any]()
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		elem = t.Elem()
	default:
		l.report(path, RuleType)
		return
	}
	for i := 0; l.dec.More() && !l.found; i++ {
		l.value(elem, path+"["+strconv.Itoa(i)+"]")
	}
	if !l.found {
		_, _ = l.dec.Token() // ']'
	}
}

// collectFields maps JSON member names to field types the way
// encoding/json does for the cases this package uses: tags, untagged
// exported fields, and embedded structs flattened.
func collectFields(t reflect.Type, out map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				collectFields(ft, out)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := out[name]; !dup {
			out[name] = f.Type
		}
	}
}
