package wire

import (
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// generic decodes a read result as before issue 25: checkJSON, then
// encoding/json.
func genericReadResult(data []byte) (WorkspaceReadResult, error) {
	type plain WorkspaceReadResult
	var r WorkspaceReadResult
	err := decodeRelative(data, (*plain)(&r))
	return r, err
}

// The one-pass decoder gives exactly the generic decoder's value, and its
// error, for results of random data and members and for malformed ones.
func TestReadResultDecodeIsGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 2))
	var docs []string
	for i := range 200 {
		data := make([]byte, rng.IntN(3)*rng.IntN(MaxReadBytes/8)+i%4)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		r := WorkspaceReadResult{Outcome: "completed", Data: data, Truncated: i%3 == 0, CloseAcknowledged: i%2 == 0}
		if i%5 == 0 {
			r = WorkspaceReadResult{Outcome: "rejected", ErrorCode: "not_found"}
		}
		b, err := json.Marshal(r)
		require.NoError(t, err)
		docs = append(docs, string(b))
	}
	enc := base64.StdEncoding.EncodeToString([]byte("hello"))
	docs = append(docs,
		`{}`, ` { "outcome" : "completed" , "data" : "`+enc+`" } `,
		`{"outcome":"completed","data":null}`,
		`{"outcome":"completed","data":"aGVsbG8"}`,    // unpadded
		`{"outcome":"completed","data":"aGVsbG9="}`,   // padding bits set
		`{"outcome":"completed","data":"aGVs\nbG8="}`, // line break
		`{"outcome":"completed","data":"aGVs\u0062G8="}`,
		`{"outcome":"comp\u006ceted"}`,
		`{"outcome":"completed","outcome":"rejected"}`,
		`{"outcome":"completed","extra":1}`,
		`{"outcome":1}`, `{"truncated":"yes"}`, `{"truncated":null}`, `{"close_acknowledged":true}`,
		`{"outcome":"completed","directory":{"entries":[],"truncated":false}}`,
		`{"outcome":"completed","data":"`+enc+`"} x`, `{"outcome":"completed",}`, `[]`, `null`, `{"outcome":"\xff"}`,
		`{"outcome":"completed","data":"`+enc+`" , }`, `{"truncated":truex}`, `{"truncated":true,}`, `{"truncated":true}`,
		`{"out\u0063ome":"completed"}`, `{"outcome":"a\u0000"}`, "{\"outcome\":\"a\x01\"}", `{"outcome":{}}`,
		`{"outcome":"completed"}{}`, `{"data":"aGVs\\bG8="}`, `{"data":"`+enc+`","data":"`+enc+`"}`, `{"data":""}`,
		`{"data":"`+enc+`"`, `{"data":"`+enc, `{"outcome":"completed" "data":"`+enc+`"}`, "{\"data\":\"aGVs\rbG8=\"}",
		`{"error_code":"not_found","outcome":"rejected"}`, ` {} `, `{ }`, `{"close_acknowledged":false,"truncated":false}`,
	)
	for _, doc := range docs {
		want, wantErr := genericReadResult([]byte(doc))
		var got WorkspaceReadResult
		err := got.UnmarshalJSON([]byte(doc))
		require.Equal(t, wantErr, err, "%.200s", doc)
		if wantErr == nil {
			require.Equal(t, want, got, "%.200s", doc)
		}
	}
}

// Through Decode, the frame of a 1 MiB read decodes without encoding/json.
func TestReadResultDecodesInOnePass(t *testing.T) {
	data := make([]byte, MaxReadBytes)
	for i := range data {
		data[i] = byte(i * 7)
	}
	frame, err := Encode("00000000-0000-4000-8000-000000000001", WorkspaceReadResult{Outcome: "completed", Data: data, CloseAcknowledged: true}, "")
	require.NoError(t, err)
	payload := frame[len(`{"type":"workspace_read_result","id":"00000000-0000-4000-8000-000000000001","payload":`) : len(frame)-1]
	_, ok := decodeReadResultDirect(payload)
	require.True(t, ok, "the common result takes the direct path")
	m, err := Decode(frame, RuntimeToCore)
	require.NoError(t, err)
	require.Equal(t, data, []byte(m.Payload.(WorkspaceReadResult).Data))
}

// The direct decoder accepts nothing the generic decoder refuses and
// decodes what it accepts to the same value.
func FuzzReadResultDecodeDirect(f *testing.F) {
	f.Add([]byte(`{"outcome":"completed","data":"aGVsbG8=","close_acknowledged":true}`))
	f.Add([]byte(`{"outcome":"rejected","error_code":"not_found"}`))
	f.Add([]byte(`{"truncated":false,"data":""}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, ok := decodeReadResultDirect(doc)
		if !ok {
			return
		}
		want, err := genericReadResult(doc)
		require.NoError(t, err, "%q", doc)
		require.Equal(t, want, got, "%q", doc)
	})
}
