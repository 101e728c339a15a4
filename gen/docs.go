package gen

import (
	"context"

	"github.com/agentwire/agentwire/spec"
)

func renderDocs(ctx context.Context, out Files, m *spec.Machine, cfg Config) error { return nil }
