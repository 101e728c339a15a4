package spec

import "embed"

// Embedded holds the spec's tables as they were when the binary was built,
// for commands run away from a checkout (agentwire diagram). The generator
// always reads the working tree.
//
//go:embed *.yaml
var Embedded embed.FS
