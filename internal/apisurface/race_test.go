//go:build race

package apisurface

// Under -race, go list must be asked for race-built export data too, or it
// compiles every public package (and modernc.org/sqlite) a second time.
func init() { raceEnabled = true }
