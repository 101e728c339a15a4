package core_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core"
	"github.com/agentwire/agentwire/core/store/memory"
)

// TestConsoleOption: the web console is served, by ServeHTTP and by
// Register, only when Config.Console asks for it.
func TestConsoleOption(t *testing.T) {
	for _, on := range []bool{false, true} {
		c, err := core.New(core.Config{Store: memory.New(), Console: on})
		require.NoError(t, err)
		mux := http.NewServeMux()
		c.Register(mux)
		for name, h := range map[string]http.Handler{"ServeHTTP": c, "Register": mux} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/console/login", nil))
			if on {
				assert.Equal(t, http.StatusOK, rec.Code, name)
				assert.Contains(t, rec.Body.String(), "Sign in", name)
				cookie := rec.Result().Cookies()
				require.Len(t, cookie, 1, name)
				assert.True(t, cookie[0].HttpOnly, name)
			} else {
				assert.Equal(t, http.StatusNotFound, rec.Code, name)
			}
		}
		c.Close()
	}
}
