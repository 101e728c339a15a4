// Package wiretest holds test fixtures shared by both peers' tests: Core's
// admission and registry tests and the Runtime's dispatcher tests build
// their capability declarations from the same function, so the two sides
// cannot disagree about what a "fully capable Harness" declares.
//
// The fixture decides every capability field by name. A field added to
// spec/capabilities.yaml is left unspecified here until someone decides it,
// and this package's own test fails until then: the fixture never grants
// (or denies) a new operation by accident.
package wiretest

import (
	"fmt"

	"github.com/agentwire/agentwire/wire"
)

// Option changes a declaration after the fixture has decided every field.
type Option func(*wire.AgentKindCapabilities)

// Capabilities returns a complete declaration in which every capability is
// supported, then applies opts in order. Each field is listed on its own
// line, deliberately: see the package comment.
func Capabilities(opts ...Option) wire.AgentKindCapabilities {
	c := wire.AgentKindCapabilities{
		Streaming:                      wire.Supported,
		Permissions:                    wire.Supported,
		Usage:                          wire.Supported,
		Resume:                         wire.Supported,
		SubagentObservations:           wire.Supported,
		NativeSessionRecovery:          wire.Supported,
		WorkspaceAuthoring:             wire.Supported,
		Steering:                       wire.Supported,
		MessageItems:                   wire.Supported,
		ToolObservations:               wire.Supported,
		EnvironmentNone:                wire.Supported,
		LocalEnvironment:               wire.Supported,
		Preparation:                    wire.Supported,
		WorkspaceReadPreparation:       wire.Supported,
		WorkspaceOutputExport:          wire.Supported,
		ProgrammaticToolCallingDisable: wire.Supported,
		WebSearchControl:               wire.Supported,
		ExecutionControls:              wire.Supported,
		TextVerbosity:                  wire.Supported,
		StructuredOutput:               wire.Supported,
		ToolSearch:                     wire.Supported,
		MessageImages:                  wire.Supported,
		FunctionResultImages:           wire.Supported,
		SubagentControl:                wire.Supported,
		DurableInputReceipts:           wire.Supported,
		DurableTurns:                   wire.Supported,
		FunctionTools:                  wire.Supported,
		MCPHTTPTools:                   wire.Supported,
		MCPHTTPRequired:                wire.Supported,
		MCPHTTPBearerAuth:              wire.Supported,
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Supports marks the named capabilities (JSON names) supported.
func Supports(names ...string) Option { return set(wire.Supported, names) }

// Unsupports marks the named capabilities unsupported.
func Unsupports(names ...string) Option { return set(wire.Unsupported, names) }

// Unspecified leaves the named capabilities undecided, which makes the
// declaration invalid: for tests of how peers reject incomplete ones.
func Unspecified(names ...string) Option { return set(wire.CapabilityUnspecified, names) }

// Only supports exactly the named capabilities and marks every other field
// unsupported. It is the one option that decides fields it does not name;
// that is its meaning ("nothing else"), so a new field is unsupported here.
func Only(names ...string) Option {
	check(names)
	return func(c *wire.AgentKindCapabilities) {
		for _, f := range wire.CapabilityFields() {
			*f.Of(c) = wire.Unsupported
		}
		set(wire.Supported, names)(c)
	}
}

func set(v wire.CapabilitySupport, names []string) Option {
	fields := check(names)
	return func(c *wire.AgentKindCapabilities) {
		for _, f := range fields {
			*f.Of(c) = v
		}
	}
}

// check resolves names when the option is built, so a misspelt name fails
// at the line that wrote it. A fixture cannot return an error; an unknown
// name is a bug in the calling test, and panicking names it.
func check(names []string) []wire.CapabilityField {
	out := make([]wire.CapabilityField, 0, len(names))
	for _, n := range names {
		found := false
		for _, f := range wire.CapabilityFields() {
			if f.Name == n {
				out = append(out, f)
				found = true
				break
			}
		}
		if !found {
			panic(fmt.Sprintf("wiretest: %q is not a capability in spec/capabilities.yaml", n))
		}
	}
	return out
}
