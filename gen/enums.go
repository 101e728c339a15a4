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

// enum writes a uint8 enum starting at 1 (zero stays "unset"), its name
// table, String, Valid and, when parse is set, a Parse function from the
// spec name. An unknown value prints as Type(n) instead of panicking.
func enum(f *jen.File, typ, doc string, items []enumItem, parse bool) {
	f.Comment(doc)
	f.Type().Id(typ).Uint8()
	if len(items) > 0 {
		var defs []jen.Code
		for i, it := range items {
			if it.Doc != "" {
				defs = append(defs, jen.Comment(it.Const+": "+it.Doc))
			}
			defs = append(defs, jen.Id(it.Const).Id(typ).Op("=").Lit(i+1))
		}
		f.Const().Defs(defs...)
	}
	names := []jen.Code{jen.Lit("")}
	for _, it := range items {
		names = append(names, jen.Lit(it.Name))
	}
	table := lowerFirst(typ) + "Names"
	f.Var().Id(table).Op("=").Index(jen.Op("...")).String().Values(names...)

	f.Comment("String returns the spec name, or " + typ + "(n) for a value outside the enum.")
	f.Func().Params(jen.Id("v").Id(typ)).Id("String").Params().String().Block(
		jen.If(jen.Id("v").Dot("Valid").Call()).Block(jen.Return(jen.Id(table).Index(jen.Id("v")))),
		jen.Return(jen.Lit(typ+"(").Op("+").Qual("strconv", "Itoa").Call(jen.Int().Call(jen.Id("v"))).Op("+").Lit(")")),
	)
	f.Comment("Valid reports whether v is one of the declared constants.")
	f.Func().Params(jen.Id("v").Id(typ)).Id("Valid").Params().Bool().Block(
		jen.Return(jen.Id("v").Op(">=").Lit(1).Op("&&").Int().Call(jen.Id("v")).Op("<").Len(jen.Id(table))),
	)
	if !parse {
		return
	}
	var cases []jen.Code
	for _, it := range items {
		cases = append(cases, jen.Case(jen.Lit(it.Name)).Block(jen.Return(jen.Id(it.Const), jen.Nil())))
	}
	f.Commentf("Parse%s returns the %s with the given spec name.", typ, lowerFirst(typ))
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
func byteTable(f *jen.File, name string, elem jen.Code, vals []jen.Code) {
	f.Var().Id(name).Op("=").Index(jen.Op("...")).Add(elem).Values(append([]jen.Code{jen.Lit(0)}, vals...)...)
}

func quoteAll(xs []string) []jen.Code {
	out := make([]jen.Code, len(xs))
	for i, x := range xs {
		out[i] = jen.Lit(x)
	}
	return out
}
