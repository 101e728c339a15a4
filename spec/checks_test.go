package spec

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vaultFile is the valid fixture of the protocol checks: it declares failed
// sends, a dispatch, a budget and a resource.
const vaultFile = "testdata/valid/vault.yaml"

func readVault(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(vaultFile)
	require.NoError(t, err)
	return string(b)
}

func TestLoadVaultDeclarations(t *testing.T) {
	src := readVault(t)
	model, err := Load(map[string][]byte{"vault.yaml": []byte(src)})
	require.NoError(t, err)
	m, ok := model.Machine("vault")
	require.True(t, ok)

	open, reply := event(t, m, "open"), event(t, m, "reply_ok")
	assert.True(t, open.Dispatch)
	assert.False(t, reply.Dispatch)
	assert.Same(t, event(t, m, "open_failed"), open.FailedSend)
	assert.Same(t, event(t, m, "link_lost"), reply.FailedSend)
	assert.Nil(t, event(t, m, "link_lost").FailedSend)

	work, send, drain := event(t, m, "work"), event(t, m, "send"), event(t, m, "drain")
	assert.Equal(t, []*Event{work, send}, drain.Budget)
	assert.Equal(t, 3*time.Second, drain.Duration, "a budget lasts the sum of its parts")
	assert.Nil(t, work.Budget)

	require.Len(t, m.Resources, 1)
	key := m.Resources[0]
	assert.Equal(t, "key", key.Name)
	assert.Equal(t, RoleCore, key.HeldBy)
	assert.True(t, key.KeptWhenUnknown)
	assert.Equal(t, Pos{File: "vault.yaml", Line: lineOf(t, src, "- name: key")}, key.Pos)
	var take, give *Action
	for _, a := range m.Actions {
		switch a.Name {
		case "take_key":
			take = a
		case "return_key":
			give = a
		}
	}
	require.NotNil(t, take)
	require.NotNil(t, give)
	assert.Same(t, key, take.Acquires)
	assert.Nil(t, take.Releases)
	assert.Same(t, key, give.Releases)
}

// TestProtocolChecks breaks the vault one declaration or rule at a time;
// each case must fail with its finding at its line.
func TestProtocolChecks(t *testing.T) {
	vault := readVault(t)
	ed := func(pairs ...string) string {
		t.Helper()
		src := vault
		for i := 0; i+1 < len(pairs); i += 2 {
			require.Equalf(t, 1, strings.Count(src, pairs[i]), "edit target %q must occur exactly once", pairs[i])
			src = strings.Replace(src, pairs[i], pairs[i+1], 1)
		}
		return src
	}
	cases := []struct {
		name, src, at, msg string
	}{
		// declarations
		{"failed_send names an unknown event", ed("failed_send: open_failed", "failed_send: open_fail"), "failed_send: open_fail",
			`message event "open" names unknown failed_send event "open_fail" (did you mean open_failed?)`},
		{"failed_send names a timer", ed("failed_send: open_failed", "failed_send: reply_wait"), "failed_send: reply_wait",
			`failed_send of "open" must be a local event the sender observes, not the timer event "reply_wait"`},
		{"failed_send names the other peer's event", ed("failed_send: open_failed", "failed_send: hurry"), "failed_send: hurry",
			`failed_send of "open" names "hurry", which only runtime observes, but core sends vault_open`},
		{"failed_send on a local event", ed("  - name: hurry\n    local: runtime\n", "  - name: hurry\n    local: runtime\n    failed_send: link_lost\n"), "failed_send: link_lost\n    doc: the runtime must",
			`event "hurry" is not a message; failed_send: only applies to messages`},
		{"dispatch on a timer", ed("    timer: 30s\n", "    timer: 30s\n    dispatch: true\n"), "dispatch: true\n    by: core",
			`event "reply_wait" is not a message; dispatch: only applies to messages`},
		{"budget of one part", ed("timer: work + send", "timer: work +"), "timer: work +",
			`budget "drain" has an empty part`},
		{"budget of an unknown timer", ed("timer: work + send", "timer: work + sned"), "timer: work + sned",
			`budget "drain" sums "sned", which is not a declared timer (did you mean send?)`},
		{"budget of a local event", ed("timer: work + send", "timer: work + hurry"), "timer: work + hurry",
			`budget "drain" sums "hurry", which is not a declared timer`},
		{"budget counts a part twice", ed("timer: work + send", "timer: work + work"), "timer: work + work",
			`budget "drain" counts timer "work" twice`},
		{"budget of another peer's timer", ed("timer: work + send", "timer: work + reply_wait"), "timer: work + reply_wait",
			`budget "drain" belongs to runtime but its part "reply_wait" to core`},
		{"resource without held_by", ed("    held_by: core\n", ""), "- name: key",
			`resource "key" needs held_by: core, runtime or both`},
		{"action acquires an unknown resource", ed("acquires: key", "acquires: keys"), "acquires: keys",
			`action "take_key" acquires unknown resource "keys" (did you mean key?)`},
		{"resource nobody releases", ed("    releases: key\n", ""), "- name: key",
			`resource "key" needs an action that acquires it and one that releases it`},

		// failed sends
		{"failed send rejected where the message moves", ed("    on: [open, open_failed]\n    to: asking\n", "    on: open\n    to: asking\n", "  - from: closed\n    on: \"*\"\n", "  - from: closed\n    on: open_failed\n    reject: impossible\n  - from: closed\n    on: \"*\"\n"),
			"  - from: closed\n    on: open_failed",
			`(closed, open_failed) rejects a failed send, but open can be sent in "closed" (it moves the machine there)`},

		// unknown outcomes
		{"unknown before any dispatch", ed("    on: [link_lost, worked, hurry, reply_wait, work, send, drain]\n", "    on: [worked, hurry, reply_wait, work, send, drain]\n", "  - from: closed\n    on: \"*\"\n", "  - from: closed\n    on: link_lost\n    to: lost\n  - from: closed\n    on: \"*\"\n"),
			"  - from: closed\n    on: link_lost\n    to: lost",
			`(closed, link_lost) -> lost ends unknown, but "closed" is reachable before any dispatch (event open) was sent or attempted`},

		// resources
		{"terminal holding a resource", ed("    to: refused\n    effects: [stop reply_wait, stop work, stop send, \"core: do return_key\"]", "    to: refused\n    effects: [stop reply_wait, stop work, stop send]"),
			"  - from: [asking, answering]\n    on: reply_no",
			`(asking, reply_no) -> refused ends the lifecycle with key still held by core: release it on this path`},
		{"unknown terminal holding a resource not kept", ed("    kept_when_unknown: true\n", ""),
			"  - from: [asking, answering]\n    on: [reply_wait, link_lost]",
			`(asking, link_lost) -> lost ends the lifecycle with key still held by core: release it on this path, or declare kept_when_unknown on key`},
		{"release of what is not held", ed("    to: opened\n    effects: [stop reply_wait, stop work, stop send, \"core: do return_key\"]", "    to: opened\n    effects: [stop reply_wait, stop work, stop send, \"core: do return_key\", \"core: do return_key\"]"),
			"  - from: [asking, answering]\n    on: reply_ok",
			`(asking, reply_ok): return_key releases key on a path where core does not hold it`},
		{"acquire of what is held", ed(`effects: ["core: do take_key", start reply_wait, start work]`, `effects: ["core: do take_key", "core: do take_key", start reply_wait, start work]`),
			"  - from: closed\n    on: [open, open_failed]",
			`(closed, open): take_key acquires key on a path where core already holds it`},
		{"resource action by the wrong peer", ed(`"core: do take_key"`, `"runtime: do take_key"`), "  - from: closed\n    on: [open, open_failed]",
			`effect "runtime: do take_key": key is held by core, so only core performs take_key (prefix it core:)`},

		// budgets
		{"part started while the budget runs", ed("    on: reply_ok\n    to: opened\n    effects: [stop drain]", "    on: reply_ok\n    to: opened\n    effects: [stop drain, start send]"),
			"  - from: finishing\n    on: reply_ok",
			`(finishing, reply_ok) starts timer send while budget drain runs, which the budget already counts (drain = work 2s + send 1s): the wait would exceed 3s`},
		{"part started when the budget expires", ed("    on: [drain, link_lost]\n    to: lost\n    effects: [stop drain]", "    on: link_lost\n    to: lost\n    effects: [stop drain]\n  - from: finishing\n    on: drain\n    to: answering\n    effects: [start reply_wait, start send]"),
			"  - from: finishing\n    on: drain",
			`(finishing, drain) starts timer send when budget drain expires`},
		{"budget restarted while it runs", ed("  - from: finishing\n    on: \"*\"\n", "  - from: finishing\n    on: hurry\n    to: same\n    effects: [stop drain, start drain]\n  - from: finishing\n    on: \"*\"\n"),
			"  - from: finishing\n    on: hurry",
			`(finishing, hurry) restarts budget drain while it runs, which extends the wait it bounds past 3s`},

		// peers settle on their own
		{"a peer stranded", ed("  - from: [asking, answering]\n    on: reply_ok\n", "  - from: answering\n    on: reply_ok\n",
			"  - from: [asking, answering]\n    on: reply_no\n", "  - from: answering\n    on: reply_no\n",
			"  - from: [asking, answering]\n    on: [reply_wait, link_lost]\n", "  - from: answering\n    on: [reply_wait, link_lost]\n",
			"  - from: asking\n    on: [send, drain]\n", "  - from: asking\n    on: [send, drain, reply_ok, reply_no, reply_wait, link_lost]\n"),
			"  - name: asking",
			`core can reach state "asking" but never settle from it: every way out is an event only the other peer fires (worked, hurry, work)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			line := lineOf(t, c.src, c.at)
			model, err := Load(map[string][]byte{"vault.yaml": []byte(c.src)})
			require.Error(t, err)
			assert.Nil(t, model)
			lines := requireOneLineErrors(t, err)
			want := fmt.Sprintf("vault.yaml:%d: ", line)
			found := false
			for _, l := range lines {
				found = found || (strings.HasPrefix(l, want) && strings.Contains(l, c.msg))
			}
			assert.Truef(t, found, "want a line %q…%q; got:\n%s", want, c.msg, err)
		})
	}
}

// A machine one peer runs alone (peers: core) takes no frame and lets the
// other peer do nothing.
func TestOwnPeerMachine(t *testing.T) {
	src := `machine: lamp
doc: a lamp Core keeps for itself
peers: core
instance: {identity: lamp, doc: lamp ID}
states:
  - name: off
    initial: true
    doc: dark
  - name: on
    doc: lit
  - name: broken
    terminal: failure
    doc: gone
events:
  - name: flip
    local: core
    doc: Core flips it
  - name: knock
    local: runtime
    doc: the Runtime knocks it
  - name: ping
    message: ping
    from: runtime
    failed_send: knock
    doc: a frame
actions:
  - name: glow
    doc: light up
rules:
  - from: off
    on: flip
    to: on
    effects: ["runtime: do glow"]
  - from: [off, on]
    on: [knock, ping]
    to: broken
  - from: on
    on: flip
    to: broken
  - from: broken
    on: "*"
    reject: gone
`
	_, err := Load(map[string][]byte{"lamp.yaml": []byte(src)})
	require.Error(t, err)
	for _, want := range []string{
		`lamp.yaml:18: event "knock" is fired by runtime, but lamp is run by core alone (peers: core)`,
		`lamp.yaml:21: event "ping" is a wire message, but lamp is run by core alone (peers: core): no frame drives it; make it local: core`,
		`lamp.yaml:30: effect "runtime: do glow" is runtime's, but lamp is run by core alone (peers: core)`,
	} {
		assert.Contains(t, err.Error(), want)
	}

	ok := strings.NewReplacer("    effects: [\"runtime: do glow\"]\n", "    effects: [do glow]\n",
		"  - name: knock\n    local: runtime\n", "  - name: knock\n    local: core\n",
		"  - name: ping\n    message: ping\n    from: runtime\n    failed_send: knock\n    doc: a frame\n", "",
		"on: [knock, ping]", "on: knock").Replace(src)
	model, err := Load(map[string][]byte{"lamp.yaml": []byte(ok)})
	require.NoError(t, err)
	m, _ := model.Machine("lamp")
	assert.Equal(t, []Role{RoleCore}, m.Roles())
}
