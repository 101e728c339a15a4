package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCoreBase(t *testing.T) {
	t.Setenv(CoreEnv, "")
	for in, want := range map[string]string{
		"http://127.0.0.1:8080":                "http://127.0.0.1:8080",
		"http://127.0.0.1:8080/":               "http://127.0.0.1:8080",
		"127.0.0.1:8080":                       "http://127.0.0.1:8080",
		"localhost:8080":                       "http://localhost:8080",
		"http://core:8080/api/v1":              "http://core:8080",
		"http://core:8080/api/v1/":             "http://core:8080",
		"https://example.com/agentwire/":       "https://example.com/agentwire",
		"https://example.com/agentwire/api/v1": "https://example.com/agentwire",
	} {
		got, err := coreBase(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for in, msg := range map[string]string{
		"":                         "--core is required (or set AGENTWIRE_CORE)",
		"ftp://core:21":            "want an http or https URL",
		"http://user:pw@core:8080": "without credentials",
		"http://core:8080/?x=1":    "without credentials, a query",
		"http://":                  "want Core's base URL",
	} {
		_, err := coreBase(in)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), msg, in)
	}
	t.Setenv(CoreEnv, "127.0.0.1:9090")
	got, err := coreBase("")
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:9090", got, "the environment stands in for the flag")
	got, err = coreBase("http://other:1")
	require.NoError(t, err)
	assert.Equal(t, "http://other:1", got, "the flag wins")
}

// A request under a wrong --core base names the full URL it tried, and a
// 404 from no route of Core's API says the base is the likely mistake; an
// API's own 404 (a Turn that does not exist) does not.
func TestWrongBaseNamesTheURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/v1/turns/") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":"not_found","detail":"no such turn"}`)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	t.Setenv("AGENTWIRE_API_KEY", "k")
	err := run([]string{"devices", "--core", srv.URL + "/foo"}, &bytes.Buffer{}, &bytes.Buffer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "GET "+srv.URL+"/foo/api/v1/devices: 404 Not Found")
	assert.Contains(t, err.Error(), "must be Core's base URL")
	err = run([]string{"turn", "status", "--core", srv.URL, "T"}, &bytes.Buffer{}, &bytes.Buffer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "GET "+srv.URL+"/api/v1/turns/T: 404 Not Found")
	assert.NotContains(t, err.Error(), "must be Core's base URL", "Core answered: the Turn is what is missing")
}
