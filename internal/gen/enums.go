package gen

import (
	"strconv"

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
// two is free: String, Valid and Parse, each one line, the first and the
// last a lookup in Table (fsm.Table.DeclName and Parse, written once for
// every enum of every machine). An unknown value prints as Type(n). An enum
// with no values is not written at all.
//
// Each constant carries the first clause of its spec doc as a line comment
// (summary), one line per value where a doc comment wrapped over two or
// three: go doc prints it in the const block, and gopls shows it on hover
// because neither the value nor its const block has a doc comment (keep it
// so). The full doc is on the machine's page and, for guards and actions,
// on the hook methods. The
// methods go undocumented, one line each with no blank line between them:
// doc describes them once, on the type (a doc comment on each would cost
// three lines per method, about 90 lines in the largest machine).
func enum(f *jen.File, typ, doc string, items []enumItem) {
	if len(items) == 0 {
		return
	}
	comment(f, doc)
	f.Type().Id(typ).Uint8()
	// gofmt aligns the line comments of the block after the widest
	// "Name Type = n"; the summary gets what is left of the line.
	widest := 0
	for _, it := range items {
		widest = max(widest, len(it.Const))
	}
	column := 4 + widest + 1 + len(typ) + len(" = ") + len(strconv.Itoa(len(items))) + len(" // ")
	var defs []jen.Code
	for i, it := range items {
		def := jen.Id(it.Const).Id(typ).Op("=").Lit(i + 1)
		if it.Doc != "" {
			def.Comment(summary("", it.Doc, lineWidth-column))
		}
		defs = append(defs, def)
	}
	f.Const().Defs(defs...)

	kind := jen.Qual(fsmPkg, "Decl"+typ)
	last := items[len(items)-1].Const
	f.Func().Params(jen.Id("v").Id(typ)).Id("String").Params().String().Add(returns(
		jen.Id("Table").Dot("DeclName").Call(kind, jen.Uint8().Call(jen.Id("v")))))
	f.Func().Params(jen.Id("v").Id(typ)).Id("Valid").Params().Bool().Add(returns(
		jen.Id("v").Op(">=").Lit(1).Op("&&").Id("v").Op("<=").Id(last)))
	f.Func().Id("Parse"+typ).Params(jen.Id("name").String()).Params(jen.Id(typ), jen.Error()).Add(returns(
		jen.Qual(fsmPkg, "As").Index(jen.Id(typ)).Call(jen.Id("Table").Dot("Parse").Call(kind, jen.Id("name")))))
}

// enumMethods is the sentence of an enum's doc that describes the three
// methods every enum has.
func enumMethods(typ string) string {
	if typ == "State" {
		return "String is its spec name (State(n) outside the enum), ParseState the reverse, and Valid " +
			"reports a declared value."
	}
	return "String, Parse" + typ + " and Valid are as for State."
}

// returns writes the body { return v } on the function's own line: jennifer
// renders a Block over several lines, and gofmt keeps a one-line body that
// the source wrote on one line. A one-expression accessor reads best so.
func returns(v jen.Code) jen.Code { return jen.Values(jen.Return(v)) }

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]|0x20) + s[1:]
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
		out = append(out, enumItem{Const: eventConst(e.Name), Name: e.Name, Doc: e.Doc})
	}
	return out
}

func timerItems(m *spec.Machine) []enumItem {
	var out []enumItem
	for _, t := range m.Timers() {
		out = append(out, enumItem{Const: timerConst(t.Name), Name: t.Name, Doc: t.Doc})
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
