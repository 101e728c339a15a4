package gen

import (
	. "github.com/dave/jennifer/jen"

	"github.com/agentwire/agentwire/spec"
)

// enumItem is one constant of a generated enum.
type enumItem struct {
	Const string // Go name
	Name  string // spec / wire name
	Doc   string
}

// enum writes a uint8 enum starting at 1 (zero stays "unset"), its name
// table, String, Valid and, when parse is set, a Parse function from the
// spec name. An unknown value prints as Type(n) instead of panicking.
func enum(f *File, typ, doc string, items []enumItem, parse bool) {
	f.Comment(doc)
	f.Type().Id(typ).Uint8()
	if len(items) > 0 {
		var defs []Code
		for i, it := range items {
			if it.Doc != "" {
				defs = append(defs, Comment(it.Const+": "+it.Doc))
			}
			defs = append(defs, Id(it.Const).Id(typ).Op("=").Lit(i+1))
		}
		f.Const().Defs(defs...)
	}
	names := []Code{Lit("")}
	for _, it := range items {
		names = append(names, Lit(it.Name))
	}
	table := lowerFirst(typ) + "Names"
	f.Var().Id(table).Op("=").Index(Op("...")).String().Values(names...)

	f.Comment("String returns the spec name, or " + typ + "(n) for a value outside the enum.")
	f.Func().Params(Id("v").Id(typ)).Id("String").Params().String().Block(
		If(Id("v").Dot("Valid").Call()).Block(Return(Id(table).Index(Id("v")))),
		Return(Lit(typ+"(").Op("+").Qual("strconv", "Itoa").Call(Int().Call(Id("v"))).Op("+").Lit(")")),
	)
	f.Comment("Valid reports whether v is one of the declared constants.")
	f.Func().Params(Id("v").Id(typ)).Id("Valid").Params().Bool().Block(
		Return(Id("v").Op(">=").Lit(1).Op("&&").Int().Call(Id("v")).Op("<").Len(Id(table))),
	)
	if !parse {
		return
	}
	var cases []Code
	for _, it := range items {
		cases = append(cases, Case(Lit(it.Name)).Block(Return(Id(it.Const), Nil())))
	}
	f.Commentf("Parse%s returns the %s with the given spec name.", typ, lowerFirst(typ))
	f.Func().Id("Parse"+typ).Params(Id("name").String()).Params(Id(typ), Error()).Block(
		Switch(Id("name")).Block(cases...),
		Return(Lit(0), Op("&").Qual(fsmPkg, "InvalidError").Values(Dict{
			Id("Machine"): Id("Name"),
			Id("What"):    Lit(lowerFirst(typ) + " name"),
			Id("Value"):   Qual(fsmPkg, "Quote").Call(Id("name")),
		})),
	)
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]|0x20) + s[1:]
}

func stateItems(m *spec.Machine) []enumItem {
	var out []enumItem
	for _, s := range m.States {
		out = append(out, enumItem{Const: stateConst(s), Name: s.Name, Doc: s.Doc})
	}
	return out
}

func eventItems(m *spec.Machine) []enumItem {
	var out []enumItem
	for _, e := range m.Events {
		out = append(out, enumItem{Const: eventConst(e), Name: e.Name, Doc: eventDoc(e)})
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
		out = append(out, enumItem{Const: timerConst(t), Name: t.Name, Doc: t.Doc + " (" + t.Duration.String() + ")"})
	}
	return out
}

func guardItems(m *spec.Machine) []enumItem {
	var out []enumItem
	for _, g := range m.Guards {
		out = append(out, enumItem{Const: guardConst(g), Name: g.Name, Doc: g.Doc})
	}
	return out
}

func actionItems(m *spec.Machine) []enumItem {
	var out []enumItem
	for _, a := range m.Actions {
		out = append(out, enumItem{Const: actionConst(a), Name: a.Name, Doc: a.Doc})
	}
	return out
}

func messageItems(m *spec.Machine) []enumItem {
	var out []enumItem
	for _, msg := range m.SentMessages() {
		out = append(out, enumItem{Const: messageConst(msg), Name: msg})
	}
	return out
}

// byteTable writes a [...]T lookup indexed by an enum, with index 0 unset.
func byteTable(f *File, name string, elem Code, vals []Code) {
	f.Var().Id(name).Op("=").Index(Op("...")).Add(elem).Values(append([]Code{Lit(0)}, vals...)...)
}

func quoteAll(xs []string) []Code {
	out := make([]Code, len(xs))
	for i, x := range xs {
		out[i] = Lit(x)
	}
	return out
}
