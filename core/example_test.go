package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentwire/agentwire/core"
	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A Core mounted under /agentwire/ of an embedder's mux, on the memory
// store with agentwire's own keys: a project creates a Session, and a
// Runtime's bootstrap names the WebSocket under the same prefix.
func Example() {
	ctx := context.Background()
	st := memory.New()
	issuer := credential.Issuer{Store: st, Now: time.Now}
	_, projectKey, _ := issuer.Issue(ctx, store.KindProject, "", "docs")
	_, deviceKey, _ := issuer.Issue(ctx, store.KindDevice, "dev-1", "docs")

	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, err := core.New(core.Config{Store: st, PublicURL: srv.URL + "/agentwire"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	mux.Handle("/agentwire/", http.StripPrefix("/agentwire", c))

	post := func(path string, key credential.Secret, body string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", srv.URL+"/agentwire"+path, bytes.NewBufferString(body))
		req.Header.Set("Authorization", "Bearer "+key.Reveal())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		var v map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	code, _ := post("/api/v1/sessions", projectKey, `{"agent_kind":"codex"}`)
	fmt.Println("create session:", code)
	code, boot := post("/api/v1/agent-daemon/bootstrap", deviceKey, `{"device_id":"dev-1"}`)
	fmt.Println("bootstrap:", code, strings.TrimPrefix(fmt.Sprint(boot["ws_url"]), strings.Replace(srv.URL, "http", "ws", 1)))
	// Output:
	// create session: 201
	// bootstrap: 200 /agentwire/api/v1/agent-daemon/ws
}

func ExampleNew_missingAuthentication() {
	_, err := core.New(core.Config{Store: storeWithoutCredentials{memory.New()}})
	fmt.Println(err)
	// Output:
	// core: no way to authenticate: set Config.Auth or Config.Credentials (core_test.storeWithoutCredentials keeps no credentials)
}

// storeWithoutCredentials hides the memory store's credential half.
type storeWithoutCredentials struct{ store.Store }
