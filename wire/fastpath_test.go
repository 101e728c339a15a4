package wire

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The in-place path for plain base64 strings decides exactly as the
// unquoting path does: each string is decoded once with a leading 'A' as
// is (the plain path whenever the rest is plain) and once with that 'A'
// escaped as \u0041 (always the unquoting path).
func TestBase64DataPlainPathAgrees(t *testing.T) {
	for _, rest := range []string{
		`GVsbG8="`, `GVsbG8"`, `GVsbG9="`, `GVsbA=="`, `GVsbB=="`, `"`, `===="`, `A=="`, `AA="`, `AAA"`,
		`GVs\nbG8="`, `GVs\u0062G8="`, `GVs bG8="`, `GVs-bG8="`, `GVs\/bG8="`, `GVs\r\nbG8="`,
	} {
		var plain, slow base64Data
		plainErr := plain.UnmarshalJSON([]byte(`"A` + rest))
		slowErr := slow.UnmarshalJSON([]byte(`"\u0041` + rest))
		assert.Equal(t, slowErr == nil, plainErr == nil, rest)
		assert.Equal(t, []byte(slow), []byte(plain), rest)
	}
}

// The direct decode of a plain workspace_write step yields what
// encoding/json yields, and whatever it does not take plainly goes to
// encoding/json with its errors unchanged.
func TestWorkspaceWriteDirectDecodeAgrees(t *testing.T) {
	for _, raw := range []string{
		`{"step":"chunk","offset":65536,"data":"aGVsbG8="}`,
		` { "step" : "chunk" , "offset" : 0 , "data" : "aGVsbG8=" } `,
		`{"step":"begin","environment_id":"8d0f3a2b-1c4e-4f5a-8b6c-7d8e9f0a1b2c","session_id":"s","path":"a/b.txt","size_bytes":5,"sha256":"ab"}`,
		`{"step":"begin","path":"a\/b.txt"}`, `{"step":"begin","path":"\u0061"}`, `{"size_bytes":null}`, `{"size_bytes":1.0}`,
		`{"offset":1e3}`, `{"offset":-0}`, `{"data":null}`, `{"data":""}`, `{"data":"aGVs\nbG8="}`, `{"data":"aGVsbG9="}`,
		`{}`, `{"step":"commit"}x`, `{"step":"commit",}`, `{"step":1}`, `{"other":1}`, `{"step":"a","step":"b"}`, `[]`, `null`,
		`{"offset":99999999999999999999}`, `{"data":12}`, `{"path":"\ud800"}`,
	} {
		var direct WorkspaceWrite
		directErr := direct.UnmarshalJSON([]byte(raw))
		type plain WorkspaceWrite
		var viaJSON WorkspaceWrite
		jsonErr := decodeBounded(TypeWorkspaceWrite, []byte(raw), (*plain)(&viaJSON))
		assert.Equal(t, jsonErr, directErr, raw)
		assert.Equal(t, viaJSON, direct, raw)
	}
}

// The word-at-a-time test agrees with a byte-by-byte one.
func TestPlainASCII8(t *testing.T) {
	ref := func(b []byte) bool {
		for _, c := range b {
			if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
				return false
			}
		}
		return true
	}
	b := make([]byte, 8)
	check := func() {
		assert.Equal(t, ref(b), plainASCII8(binary.LittleEndian.Uint64(b)), "%q", b)
	}
	for pos := range 8 {
		for v := range 256 {
			copy(b, "AAAAAAAA")
			b[pos] = byte(v)
			check()
			copy(b, "\x20\x7f\x21\x5b\x5d\x23\x7e\x30")
			b[pos] = byte(v)
			check()
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		binary.LittleEndian.PutUint64(b, r.Uint64())
		check()
		for i := range b { // mostly printable ASCII
			b[i] = byte(0x1e + r.IntN(0x64))
		}
		check()
	}
}

// scanString agrees with a byte-by-byte scan.
func TestScanStringAgrees(t *testing.T) {
	ref := func(b []byte, i int) (int, bool, bool) {
		esc := false
		for i++; i < len(b); i++ {
			switch b[i] {
			case '\\':
				esc = true
				i++
			case '"':
				return i + 1, esc, true
			}
		}
		return len(b), esc, false
	}
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte(`ab"\\`)
	for range 100000 {
		b := make([]byte, 1+r.IntN(12))
		b[0] = '"'
		for i := 1; i < len(b); i++ {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		e1, s1, c1 := ref(b, 0)
		e2, s2, c2 := scanString(b, 0)
		require.Equal(t, []any{e1, s1, c1}, []any{e2, s2, c2}, "%q", b)
	}
}
