package gen

import (
	"github.com/dave/jennifer/jen"

	"github.com/agentwire/agentwire/spec"
)

// enumItem is one constant of a generated enum.
type enumItem struct {
	Const string // Go name
	Name  string // spec / wire name
	Doc   string
}

// enum writes a uint8 enum whose values are the engine's IDs of one kind of
// declaration (1..n in Table order, zero unset), so converting between the
// two is free: String, Valid and Parse. String reads the name from Table
// through name(v); an unknown value prints as Type(n). An enum with no
// values is not written at all.
func enum(f *jen.File, typ, doc string, items []enumItem, name func(v *jen.Statement) *jen.Statement) {
	if len(items) == 0 {
		return
	}
	comment(f, doc)
	f.Type().Id(typ).Uint8()
	var defs []jen.Code
	for i, it := range items {
		if it.Doc != "" {
			for _, l := range wrapLines(it.Const+": "+it.Doc, docWidth-4) {
				defs = append(defs, jen.Comment(l))
			}
		}
		defs = append(defs, jen.Id(it.Const).Id(typ).Op("=").Lit(i+1))
	}
	f.Const().Defs(defs...)

	last := items[len(items)-1].Const
	comment(f, "String returns the spec name, or "+typ+"(n) for a value outside the enum.")
	f.Func().Params(jen.Id("v").Id(typ)).Id("String").Params().String().Block(
		jen.If(jen.Id("v").Dot("Valid").Call()).Block(jen.Return(name(jen.Id("v").Op("-").Lit(1)))),
		jen.Return(jen.Lit(typ+"(").Op("+").Qual("strconv", "Itoa").Call(jen.Int().Call(jen.Id("v"))).Op("+").Lit(")")),
	)
	comment(f, "Valid reports whether v is one of the declared constants.")
	f.Func().Params(jen.Id("v").Id(typ)).Id("Valid").Params().Bool().Block(
		jen.Return(jen.Id("v").Op(">=").Lit(1).Op("&&").Id("v").Op("<=").Id(last)),
	)
	var cases []jen.Code
	for _, it := range items {
		cases = append(cases, jen.Case(jen.Lit(it.Name)).Block(jen.Return(jen.Id(it.Const), jen.Nil())))
	}
	commentf(f, "Parse%s returns the %s with the given spec name.", typ, lowerFirst(typ))
	f.Func().Id("Parse"+typ).Params(jen.Id("name").String()).Params(jen.Id(typ), jen.Error()).Block(
		jen.Switch(jen.Id("name")).Block(cases...),
		jen.Return(jen.Lit(0), jen.Op("&").Qual(fsmPkg, "InvalidError").Values(jen.Dict{
			jen.Id("Machine"): jen.Id("Name"),
			jen.Id("What"):    jen.Lit(lowerFirst(typ) + " name"),
			jen.Id("Value"):   jen.Qual(fsmPkg, "Quote").Call(jen.Id("name")),
		})),
	)
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]|0x20) + s[1:]
}

// tableField returns a name function for enum: Table.<field>[i]<suffix>.
func tableField(field, suffix string) func(*jen.Statement) *jen.Statement {
	return func(i *jen.Statement) *jen.Statement {
		s := jen.Id("Table").Dot(field).Index(i)
		if suffix != "" {
			s = s.Dot(suffix)
		}
		return s
	}
}

func stateItems(m *spec.Machine) []enumItem {
	var out []enumItem
	for _, s := range m.States {
		out = append(out, enumItem{Const: stateConst(s.Name), Name: s.Name, Doc: s.Doc})
	}
	return out
}

func eventItems(m *spec.Machine) []enumItem {
	var out []enumItem
	for _, e := range m.Events {
		out = append(out, enumItem{Const: eventConst(e.Name), Name: e.Name, Doc: eventDoc(e)})
	}
	return out
}

func eventDoc(e *spec.Event) string {
	switch e.Kind {
	case spec.EventMessage:
		return e.Doc + " (wire " + e.Message + ", sent by " + e.From.String() + ")"
	case spec.EventTimer:
		return e.Doc + " (timer " + e.Duration.String() + ", owned by " + e.By.String() + ")"
	}
	return e.Doc + " (local, observed by " + e.By.String() + ")"
}

func timerItems(m *spec.Machine) []enumItem {
	var out []enumItem
	for _, t := range m.Timers() {
		out = append(out, enumItem{Const: timerConst(t.Name), Name: t.Name, Doc: t.Doc + " (" + t.Duration.String() + ")"})
	}
	return out
}

func guardItems(m *spec.Machine) []enumItem {
	var out []enumItem
	for _, g := range m.Guards {
		out = append(out, enumItem{Const: guardConst(g.Name), Name: g.Name, Doc: g.Doc})
	}
	return out
}

func actionItems(m *spec.Machine) []enumItem {
	var out []enumItem
	for _, a := range m.Actions {
		out = append(out, enumItem{Const: actionConst(a.Name), Name: a.Name, Doc: a.Doc})
	}
	return out
}

// messageItems lists every wire type the machine sends or observes, in the
// engine's order (sorted), with who sends it and how.
func messageItems(m *spec.Machine) []enumItem {
	sent := map[string]bool{}
	for _, msg := range m.SentMessages() {
		sent[msg] = true
	}
	var out []enumItem
	for _, msg := range m.Messages() {
		doc := "observed as an event"
		switch observed := observes(m, msg); {
		case sent[msg] && observed:
			doc = "sent as an effect and observed as an event"
		case sent[msg]:
			doc = "sent as an effect"
		}
		out = append(out, enumItem{Const: messageConst(msg), Name: msg, Doc: doc})
	}
	return out
}

func observes(m *spec.Machine, msg string) bool {
	for _, e := range m.Events {
		if e.Kind == spec.EventMessage && e.Message == msg {
			return true
		}
	}
	return false
}
