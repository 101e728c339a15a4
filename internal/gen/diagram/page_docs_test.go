package diagram

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPageCarriesEveryDoc checks that each machine's page holds the spec
// doc of every state, event, guard and action in full. The generated Go
// constants carry only the first clause of it (gen's summary), and the
// package doc sends the reader here for the rest, so a doc left off the page
// would be lost to anyone not reading the YAML.
func TestPageCarriesEveryDoc(t *testing.T) {
	for _, m := range specMachines(t) {
		page := string(Page(m))
		has := func(kind, name, doc string) {
			if doc != "" {
				assert.True(t, strings.Contains(page, mdCell(doc)), "%s: the %s %s's doc is not on its page", m.Name, kind, name)
			}
		}
		has("machine", m.Name, m.Doc)
		for _, s := range m.States {
			has("state", s.Name, s.Doc)
		}
		for _, e := range m.Events {
			has("event", e.Name, e.Doc)
		}
		for _, g := range m.Guards {
			has("guard", g.Name, g.Doc)
		}
		for _, a := range m.Actions {
			has("action", a.Name, a.Doc)
		}
	}
}
