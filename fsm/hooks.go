package fsm

// HookTable is a Binding made of functions indexed by ID: a generated
// machine package fills one from a role's hooks interface (its Core and
// Runtime functions), so mapping an ID to a method is data, written once per
// machine, and the dispatch is written once here. A nil or missing entry is
// something the role does not do: such a guard never holds, and such an
// effect fails with a *TableError (Machine.Fire wraps it in an
// *EffectError).
type HookTable[A any] struct {
	Guards  []func(*Firing[A]) bool  // indexed by GuardID
	Sends   []func(*Firing[A]) error // indexed by MessageID
	Actions []func(*Firing[A]) error // indexed by ActionID
}

// Guard evaluates guard g.
func (h *HookTable[A]) Guard(g GuardID, f *Firing[A]) bool {
	if int(g) < len(h.Guards) {
		if fn := h.Guards[g]; fn != nil {
			return fn(f)
		}
	}
	return false
}

// Perform runs the hook of one send or do effect.
func (h *HookTable[A]) Perform(ef *Effect, f *Firing[A]) error {
	var fn func(*Firing[A]) error
	switch ef.Kind {
	case EffectSend:
		if int(ef.Message) < len(h.Sends) {
			fn = h.Sends[ef.Message]
		}
	case EffectDo:
		if int(ef.Action) < len(h.Actions) {
			fn = h.Actions[ef.Action]
		}
	}
	if fn == nil {
		return h.unbound(ef, f)
	}
	return fn(f)
}

// unbound builds the error for an effect without a hook, off the hot path.
func (h *HookTable[A]) unbound(ef *Effect, f *Firing[A]) error {
	if f == nil || f.Table == nil {
		return &TableError{Msg: "no hook for a " + ef.Kind.String() + " effect"}
	}
	return &TableError{Machine: f.Table.Name, Source: f.Table.Source, Msg: "no hook for " + f.Table.EffectString(ef)}
}
