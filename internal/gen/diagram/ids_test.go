package diagram

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/gen/diagram/render"
	"github.com/agentwire/agentwire/spec"
)

// svgIDs reads every element ID and the class of each element of an SVG.
func svgIDs(t *testing.T, svg []byte) map[string]string {
	t.Helper()
	ids := map[string]string{}
	dec := xml.NewDecoder(bytes.NewReader(svg))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return ids
		}
		require.NoError(t, err)
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		var id, class string
		for _, a := range el.Attr {
			switch a.Name.Local {
			case "id":
				id = a.Value
			case "class":
				class = a.Value
			}
		}
		if id != "" {
			_, dup := ids[id]
			require.False(t, dup, "element ID %q appears twice", id)
			ids[id] = class
		}
	}
}

// TestStableIDs renders every machine of the real spec and checks that each
// state and each arrow carries the ID a page lights it by, once, with the
// classes naming the arrow's events; the IDs depend only on names, so they
// stay put however Graphviz lays the picture out.
func TestStableIDs(t *testing.T) {
	model, err := spec.LoadDir(os.DirFS("../../../spec"), ".", "spec")
	require.NoError(t, err)
	for _, m := range model.Machines {
		t.Run(m.Name, func(t *testing.T) {
			svg, err := render.SVG(context.Background(), DOT(m))
			require.NoError(t, err)
			ids := svgIDs(t, svg)
			for _, s := range m.States {
				assert.Equal(t, "node", ids[StateID(s.Name)], "state %s", s.Name)
			}
			assert.Contains(t, ids, StartID)
			assert.Contains(t, ids, EntryID(m.Initial().Name))
			for _, ed := range edges(m) {
				class, ok := ids[TransitionID(ed.from.Name, ed.to.Name)]
				require.True(t, ok, "arrow %s → %s has no ID", ed.from.Name, ed.to.Name)
				for _, a := range ed.arcs {
					assert.Contains(t, " "+class+" ", " "+EventClass(a.rule.Event.Name)+" ")
				}
			}
		})
	}
}

// TestTransitionIDsUnambiguous: spec names have no "-", so the parts of an
// ID never run into each other (a_b-c and a-b_c differ).
func TestTransitionIDsUnambiguous(t *testing.T) {
	assert.NotEqual(t, TransitionID("a_b", "c"), TransitionID("a", "b_c"))
	assert.Equal(t, "tr-idle-requested", TransitionID("idle", "requested"))
	assert.Equal(t, "state-idle", StateID("idle"))
}
