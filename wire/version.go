package wire

// VersionCompatible reports whether a peer's wire version may talk to this
// one. Only an exact match counts, patch component included: a "-dev" or
// "+build" suffix, a different patch or a malformed string is incompatible,
// and the upgrade is refused with HTTP 426 incompatible_version before any
// frame is dispatched. The wire version is independent of the Runtime build
// version that heartbeats report.
func VersionCompatible(v string) bool { return v == Version }
