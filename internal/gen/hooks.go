package gen

import (
	"github.com/dave/jennifer/jen"

	"github.com/agentwire/agentwire/spec"
)

// roleView is what one peer of a machine evaluates and performs: the
// methods of its hooks interface.
type roleView struct {
	role    spec.Role
	name    string               // "Core" or "Runtime"
	handles map[*spec.Event]bool // the events this peer feeds its machine
	guards  []*spec.Guard        // declaration order
	sends   []string             // sorted, as the Message enum
	actions []*spec.Action       // declaration order
	timers  bool                 // whether the peer arms or disarms a timer
}

// analyse works out role's view of m. A peer handles every message event
// (the sender fires its own send once written, the receiver the frame it
// read), the timers it owns, the local events it observes, and the events
// that effects it performs raise. It evaluates the guards of the cells of
// those events, and performs the sends and actions tagged with its role or
// with none.
func analyse(m *spec.Machine, role spec.Role) roleView {
	v := roleView{role: role, name: roleName(role), handles: map[*spec.Event]bool{}}
	for _, e := range m.Events {
		if e.Kind == spec.EventMessage || role.Performs(e.By) {
			v.handles[e] = true
		}
	}
	sends := map[string]bool{}
	actions := map[*spec.Action]bool{}
	for _, r := range m.Rules {
		for _, ef := range r.Effects {
			if !role.Performs(ef.Role) {
				continue
			}
			switch ef.Kind {
			case spec.EffectSend:
				sends[ef.Message] = true
			case spec.EffectDo:
				actions[ef.Action] = true
			case spec.EffectStart, spec.EffectStop:
				v.timers = true
			case spec.EffectRaise:
				v.handles[ef.Raise] = true
			}
		}
	}
	guards := map[*spec.Guard]bool{}
	for _, r := range m.Rules {
		if r.Guard != nil && v.handles[r.Event] {
			guards[r.Guard] = true
		}
	}
	for _, g := range m.Guards {
		if guards[g] {
			v.guards = append(v.guards, g)
		}
	}
	for _, msg := range m.Messages() {
		if sends[msg] {
			v.sends = append(v.sends, msg)
		}
	}
	for _, a := range m.Actions {
		if actions[a] {
			v.actions = append(v.actions, a)
		}
	}
	return v
}

func firingParam() jen.Code {
	return jen.Id("f").Op("*").Qual(fsmPkg, "Firing").Types(jen.Id("A"))
}

// hooksDecl writes one role's hooks interface, the function that binds it
// (ID → method) and the constructor of a machine for that role.
func hooksDecl(f *jen.File, m *spec.Machine, v roleView) {
	const width = docWidth - 4
	var methods []jen.Code
	for _, g := range v.guards {
		methods = append(methods, comments(guardMethod(g.Name)+" reports whether "+g.Doc+".", width)...)
		methods = append(methods, jen.Id(guardMethod(g.Name)).Params(firingParam()).Bool())
	}
	for _, msg := range v.sends {
		methods = append(methods, comments(sendMethod(msg)+" sends the "+msg+" frame of this instance.", width)...)
		methods = append(methods, jen.Id(sendMethod(msg)).Params(firingParam()).Error())
	}
	for _, a := range v.actions {
		methods = append(methods, comments(actionMethod(a.Name)+" performs "+a.Name+": "+a.Doc+".", width)...)
		methods = append(methods, jen.Id(actionMethod(a.Name)).Params(firingParam()).Error())
	}
	iface := v.name + "Hooks"
	commentf(f, "%s is what a %s peer implements to run the %s machine, called as fsm.Binding says. A "+
		"method must not change the machine, nor keep the *fsm.Firing after the call.", iface, v.name, m.Name)
	f.Type().Id(iface).Types(jen.Id("A").Any()).Interface(methods...)

	table := func(typ string, names []jen.Code) jen.Code {
		if len(names) == 0 {
			return nil
		}
		return jen.Index().Func().Params(jen.Op("*").Qual(fsmPkg, "Firing").Types(jen.Id("A"))).Id(typ).Values(names...)
	}
	var guards, sends, actions []jen.Code
	for _, g := range v.guards {
		guards = append(guards, jen.Id(guardConst(g.Name)).Op(":").Id("h").Dot(guardMethod(g.Name)))
	}
	for _, msg := range v.sends {
		sends = append(sends, jen.Id(messageConst(msg)).Op(":").Id("h").Dot(sendMethod(msg)))
	}
	for _, a := range v.actions {
		actions = append(actions, jen.Id(actionConst(a.Name)).Op(":").Id("h").Dot(actionMethod(a.Name)))
	}
	commentf(f, "%s binds h as the guards and effects of a %s peer, by ID (nil for a nil h).", v.name, v.name)
	f.Func().Id(v.name).Types(jen.Id("A").Any()).Params(jen.Id("h").Id(iface).Types(jen.Id("A"))).Qual(fsmPkg, "Binding").Types(jen.Id("A")).Block(
		jen.If(jen.Id("h").Op("==").Nil()).Block(jen.Return(jen.Nil())),
		jen.Return(jen.Op("&").Qual(fsmPkg, "HookTable").Types(jen.Id("A")).Add(keyed(true,
			field{"Guards", table("bool", guards)},
			field{"Sends", table("error", sends)},
			field{"Actions", table("error", actions)},
		))),
	)

	timers := "timers may be nil: the " + v.name + " arms no timer here."
	if v.timers {
		timers = "timers, not nil, arms the " + v.name + "'s timers."
	}
	commentf(f, "New%s returns a %s machine in Initial that runs h after each step (fsm.Machine.Fire); %s",
		v.name, m.Name, timers)
	f.Func().Id("New"+v.name).Types(jen.Id("A").Any()).Params(
		jen.Id("h").Id(iface).Types(jen.Id("A")),
		jen.Id("timers").Qual(fsmPkg, "Timers").Types(jen.Id("A")),
	).Params(jen.Op("*").Qual(fsmPkg, "Machine").Types(jen.Id("A")), jen.Error()).Block(
		jen.Return(jen.Qual(fsmPkg, "NewMachine").Call(jen.Id("Table"), jen.Qual(fsmPkg, "Role"+v.name), jen.Id(v.name).Index(jen.Id("A")).Call(jen.Id("h")), jen.Id("timers"))),
	)
}
