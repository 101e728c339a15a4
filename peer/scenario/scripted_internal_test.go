package scenario

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRenderKeepsPlaceholders: a frame rendered with no expected line (a
// directive recorded with -rewrite) writes Runtime-generated values as
// placeholders, numbering later distinct ones, while a value Core sent
// stays literal and an expected line's own placeholder wins.
func TestRenderKeepsPlaceholders(t *testing.T) {
	s := &scripted{bind: map[string]string{}, sent: map[string]bool{}, opts: ScriptedOptions{Generated: DefaultGenerated}}
	first := []byte(`{"type":"preparation_status","id":"prepare","payload":{"state":"ready","revision":2,"executor_id":"executor-9f","handle":"handle-1a","expires_at":1800000300000}}`)
	assert.Equal(t, `runtime: preparation_status prepare {"executor_id":"$executor","expires_at":"$expires_at","handle":"$handle","revision":2,"state":"ready"}`, s.render(first, ""))

	s.remember(map[string]any{"handle": "handle-stale", "executor_id": "executor-9f"})
	echo := []byte(`{"type":"preparation_status","id":"prepare","payload":{"state":"rejected","revision":0,"handle":"handle-stale","error_code":"invalid_start"}}`)
	assert.Equal(t, `runtime: preparation_status prepare {"error_code":"invalid_start","handle":"handle-stale","revision":0,"state":"rejected"}`, s.render(echo, ""))

	second := []byte(`{"type":"preparation_status","id":"prepare-2","payload":{"state":"ready","revision":1,"reused":true,"executor_id":"executor-9f","handle":"handle-2b","expires_at":1800000300000}}`)
	assert.Equal(t, `runtime: preparation_status prepare-2 {"executor_id":"$executor","expires_at":"$expires_at","handle":"$handle2","reused":true,"revision":1,"state":"ready"}`, s.render(second, ""))

	third := []byte(`{"type":"preparation_status","id":"prepare-3","payload":{"state":"preparing","revision":1,"executor_id":"executor-77","handle":"handle-3c"}}`)
	want := `runtime: preparation_status prepare-3 {"executor_id":"$other","handle":"$handle3","revision":1,"state":"preparing"}`
	assert.Equal(t, want, s.render(third, want))
}
