package daemon

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDialURLStaysOnCoresOrigin(t *testing.T) {
	for _, tc := range []struct {
		core, ws, want, err string
	}{
		{"http://127.0.0.1:8080", "", "ws://127.0.0.1:8080" + WSPath, ""},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080" + WSPath, "ws://127.0.0.1:8080" + WSPath, ""},
		{"https://core.example", "wss://core.example:443" + WSPath, "wss://core.example:443" + WSPath, ""},
		{"https://core.example", "https://CORE.example" + WSPath, "wss://CORE.example" + WSPath, ""},
		{"http://core.example", "wss://core.example:80" + WSPath, "wss://core.example:80" + WSPath, ""},
		{"https://core.example", "ws://core.example:443" + WSPath, "", "would drop to plain ws"},
		{"https://core.example", "wss://core.example:8443" + WSPath, "", "not on the origin"},
		{"http://127.0.0.1:8080", "ws://127.0.0.2:8080" + WSPath, "", "not on the origin"},
	} {
		got, err := dialURL(tc.core, Bootstrap{WSURL: tc.ws}, "dev-1")
		if tc.err != "" {
			require.Error(t, err, "%s via %s", tc.ws, tc.core)
			assert.Contains(t, err.Error(), tc.err)
			continue
		}
		require.NoError(t, err, "%s via %s", tc.ws, tc.core)
		assert.Contains(t, got, tc.want+"?")
		assert.Contains(t, got, "device_id=dev-1")
	}
}
