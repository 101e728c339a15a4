package fsm

// StepOf is a Step whose IDs are one generated machine's enums: a
// generated package declares `type Step = fsm.StepOf[State, Event, Guard]`
// instead of writing the same typed accessors once per machine. The
// untyped accessors (Disposition, Effects, Reason, Rule, Line) come from
// the embedded Step; the conversions are free (every ID is a uint8).
type StepOf[S, E, G ~uint8] struct{ Step }

// From is the state the event arrived in.
func (s StepOf[S, E, G]) From() S { return S(s.Step.From()) }

// Event is the event that was handled.
func (s StepOf[S, E, G]) Event() E { return E(s.Step.Event()) }

// To is the state after the step; it equals From unless the step moved.
func (s StepOf[S, E, G]) To() S { return S(s.Step.To()) }

// Guard is the guard that selected the candidate, or 0 for the fallback.
func (s StepOf[S, E, G]) Guard() G { return G(s.Step.Guard()) }
