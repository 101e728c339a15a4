package wire

// idBinder is implemented by payloads that repeat their envelope id in a
// member: the two must agree, or a frame could name one Run on the route
// and another in its body.
type idBinder interface {
	boundID() (field, value string)
}

// boundID: a prompt_request's run_id is its Envelope.id.
func (p PromptRequest) boundID() (string, string) { return "run_id", p.RunID }

// checkBinding checks a payload's repeated id against the envelope's.
func checkBinding(typ, id string, p Payload) error {
	b, ok := p.(idBinder)
	if !ok {
		return nil
	}
	field, v := b.boundID()
	if v != id {
		return fieldErr(typ, "payload."+field, RuleConflict, "must equal the envelope id")
	}
	return nil
}
