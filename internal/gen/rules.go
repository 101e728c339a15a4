package gen

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/spec"
)

// compactRules writes the rules of m back in the compact form of fsm.Rule,
// one per YAML rule in spec order, from the cells they expanded into (a
// catch-all that fills no cell has no candidate and is left out). It then
// expands them with the engine and checks that the result is t, cell for
// cell, so the generated literal can only ever seal into the spec's table.
func compactRules(m *spec.Machine, t *fsm.Table) ([]fsm.Rule, []int, error) {
	type group struct {
		first   int // index in m.Rules: spec order for rules on one line
		rule    *spec.Rule
		from    []string
		on      []string
		seenS   map[string]bool
		seenE   map[string]bool
		allSame bool
	}
	groups := map[string]*group{}
	var order []*group
	for i, r := range m.Rules {
		g := groups[r.ID]
		if g == nil {
			g = &group{first: i, rule: r, seenS: map[string]bool{}, seenE: map[string]bool{}, allSame: true}
			groups[r.ID] = g
			order = append(order, g)
		}
		if !g.seenS[r.From.Name] {
			g.seenS[r.From.Name] = true
			g.from = append(g.from, r.From.Name)
		}
		if !g.seenE[r.Event.Name] {
			g.seenE[r.Event.Name] = true
			g.on = append(g.on, r.Event.Name)
		}
		if r.Kind == spec.RuleGoto && r.To != r.From {
			g.allSame = false
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].rule.Pos.Line < order[j].rule.Pos.Line })
	effects := map[string]string{}
	for i := range t.Cells {
		for _, c := range t.Cells[i].Cands {
			var efs []string
			for j := range c.Effects {
				efs = append(efs, t.EffectString(&c.Effects[j]))
			}
			effects[c.Rule] = strings.Join(efs, ", ")
		}
	}
	var out []fsm.Rule
	var lines []int
	for _, g := range order {
		r := g.rule
		lines = append(lines, r.Pos.Line)
		fr := fsm.Rule{ID: r.ID, From: strings.Join(g.from, ", "), On: strings.Join(g.on, ", "), Effects: effects[r.ID]}
		if r.Wildcard {
			fr.On = "*"
		}
		if r.Guard != nil {
			fr.Guard = r.Guard.Name
		}
		switch r.Kind {
		case spec.RuleGoto:
			fr.To = r.To.Name
			if g.allSame && len(g.from) > 1 {
				fr.To = "same"
			}
		case spec.RuleIgnore:
			fr.Ignore = r.Reason
		case spec.RuleReject:
			fr.Reject = r.Reason
		}
		out = append(out, fr)
	}
	if err := sameExpansion(t, out, lines); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", m.Pos, err)
	}
	return out, lines, nil
}

// sameExpansion expands rules over t's declarations and compares the cells
// with t's: a generator bug, not a spec error, if they differ.
func sameExpansion(t *fsm.Table, rules []fsm.Rule, lines []int) error {
	x := fsm.Table{Name: t.Name, Source: t.Source, States: t.States, Events: t.Events, Guards: t.Guards,
		Actions: t.Actions, Messages: t.Messages, Timers: t.Timers, Initial: t.Initial, Rules: rules, Lines: lines}
	if err := x.Seal(); err != nil {
		return err
	}
	for i := range t.Cells {
		want, got := t.Cells[i].Cands, x.Cells[i].Cands
		if len(want) != len(got) {
			return fmt.Errorf("the compact rules expand to %d candidates in cell %d, want %d", len(got), i, len(want))
		}
		for j := range want {
			if !reflect.DeepEqual(*want[j], *got[j]) {
				return fmt.Errorf("the compact rules expand to %+v in cell %d, want %+v", *got[j], i, *want[j])
			}
		}
	}
	return nil
}

// ruleLits writes one fsm.Rule literal per line.
func ruleLits(rules []fsm.Rule) []jen.Code {
	str := func(s string) jen.Code {
		if s == "" {
			return nil
		}
		return jen.Lit(s)
	}
	var out []jen.Code
	for _, r := range rules {
		out = append(out, keyed(false,
			field{"ID", jen.Lit(r.ID)},
			field{"From", jen.Lit(r.From)},
			field{"On", jen.Lit(r.On)},
			field{"Guard", str(r.Guard)},
			field{"To", str(r.To)},
			field{"Ignore", str(r.Ignore)},
			field{"Reject", str(r.Reject)},
			field{"Effects", str(r.Effects)},
		))
	}
	return out
}
