package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A quota's 429 is printed in words: which quota, its limit, what Core
// said and when to retry.
func TestQuotaRefusalIsPrintedClearly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":"quota_exceeded","quota":"sessions","limit":1000,"detail":"the project has 1000 Sessions, its limit"}`)
	}))
	defer srv.Close()
	t.Setenv("AGENTWIRE_API_KEY", "k")
	err := run([]string{"session", "create", "--core", srv.URL, "--kind", "codex"}, &bytes.Buffer{}, &bytes.Buffer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "POST "+srv.URL+"/api/v1/sessions: 429 Too Many Requests: the project's sessions quota (limit 1000) refused it: the project has 1000 Sessions, its limit; retry in 5 s")
}
