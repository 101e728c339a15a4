package wire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

type locInner struct {
	Kind string `json:"kind"`
	N    int32  `json:"n,omitempty"`
}

type locOuter struct {
	Items []locInner `json:"items"`
	M     struct {
		Deep []locInner `json:"deep"`
	} `json:"m"`
	Tags map[string]locInner `json:"tags"`
}

// TestDecodeNamesNestedFields: the error names the exact nested field with
// its indices, which encoding/json's own errors leave out.
func TestDecodeNamesNestedFields(t *testing.T) {
	cases := []struct {
		in, field string
		rule      Rule
	}{
		{`{"items":[{"kind":"a"},{"kind":"b","zz":1}]}`, "payload.items[1].zz", RuleUnknownField},
		{`{"m":{"deep":[{"kind":1}]}}`, "payload.m.deep[0].kind", RuleType},
		{`{"items":[{"n":"x"}]}`, "payload.items[0].n", RuleType},
		{`{"m":{"deep":[{},{"n":1.5}]}}`, "payload.m.deep[1].n", RuleType},
		{`{"items":[{"n":99999999999}]}`, "payload.items[0].n", RuleType},
		{`{"tags":{"a":{"kind":"x","q":true}}}`, "payload.tags.a.q", RuleUnknownField},
		{`{"items":{"kind":"a"}}`, "payload.items", RuleType},
		{`{"unknown":1}`, "payload.unknown", RuleUnknownField},
	}
	for _, c := range cases {
		var v locOuter
		err := decodeStrict("x", "payload", []byte(c.in), &v)
		var fe *FieldError
		require.ErrorAs(t, err, &fe, c.in)
		require.Equal(t, c.field, fe.Field, c.in)
		require.Equal(t, c.rule, fe.Rule, c.in)
	}
}

func TestDecodeRejectsCaseVariantNames(t *testing.T) {
	for _, in := range []string{`{"items":[{"KIND":"a"}]}`, `{"Items":[]}`, `{"items":[{"kind":"a","\u004b":"b"}]}`, "{\"items\":[{\"\u212aind\":\"a\"}]}"} {
		var v locOuter
		err := decodeStrict("x", "payload", []byte(in), &v)
		var fe *FieldError
		require.ErrorAs(t, err, &fe, in)
		require.Equal(t, RuleUnknownField, fe.Rule, in)
	}
	// Upper-case letters in values are fine and take the fast path.
	var v locOuter
	require.NoError(t, decodeStrict("x", "payload", []byte(`{"items":[{"kind":"Hello: World"}]}`), &v))
	require.NoError(t, decodeStrict("x", "payload", []byte(`{"items":[{"kind":"Hello: World \"A\": x"}]}`), &v))
}

func TestEscapedExactNamesAreAccepted(t *testing.T) {
	var v locOuter
	require.NoError(t, decodeStrict("x", "payload", []byte(`{"items":[{"\u006bind":"a"}]}`), &v))
	require.Equal(t, "a", v.Items[0].Kind)
}

// TestEachMemberRejectsBrokenObjects: the member walker checks the object's
// own punctuation, since it no longer runs a separate validity pass.
func TestEachMemberRejectsBrokenObjects(t *testing.T) {
	noop := func(string, []byte) error { return nil }
	for _, in := range []string{``, ` `, `{`, `{"a"`, `{"a" true}`, `{"a":}`, `{"a":true,}`, `{"a":true "b":false}`, `{"a":true}x`, `{"`, `{"a":true}}`, `{true:1}`} {
		require.Error(t, eachMember([]byte(in), noop), in)
	}
	for _, in := range []string{`{}`, ` { "a" : true , "b":[1,{"c":2}] } `} {
		require.NoError(t, eachMember([]byte(in), noop), in)
	}
	var fe *FieldError
	require.ErrorAs(t, eachMember([]byte(`null`), noop), &fe)
	require.Equal(t, RuleRequired, fe.Rule)
	require.ErrorAs(t, eachMember([]byte(`[1]`), noop), &fe)
	require.Equal(t, RuleType, fe.Rule)
}
