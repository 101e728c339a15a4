package wire

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// invalidUTF8 returns the JSON path (relative to v) of the first string in
// v that is not valid UTF-8. Encode refuses such a payload: encoding/json
// would replace the bad bytes with U+FFFD and send a different string from
// the one the caller holds, which is the silent repair the decoder refuses
// on the way in. Raw JSON members are checked by their validators
// (checker.nativeJSON) and byte slices hold binary data, so neither is
// walked here.
func invalidUTF8(v reflect.Value, path string) (string, bool) {
	switch v.Kind() {
	case reflect.String:
		return path, !utf8.ValidString(v.String())
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "", false
		}
		return invalidUTF8(v.Elem(), path)
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			name, _, _ := strings.Cut(tag, ",")
			if tag == "-" || !f.IsExported() && !f.Anonymous {
				continue
			}
			sub := path
			if !f.Anonymous || name != "" {
				if name == "" {
					name = f.Name
				}
				sub = join(path, name)
			}
			if p, bad := invalidUTF8(v.Field(i), sub); bad {
				return p, true
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return "", false
		}
		for i := 0; i < v.Len(); i++ {
			if p, bad := invalidUTF8(v.Index(i), path+"["+strconv.Itoa(i)+"]"); bad {
				return p, true
			}
		}
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		for _, k := range keys {
			if k.Kind() == reflect.String && !utf8.ValidString(k.String()) {
				return path, true
			}
			if p, bad := invalidUTF8(v.MapIndex(k), join(path, cutName(k.String()))); bad {
				return p, true
			}
		}
	}
	return "", false
}
