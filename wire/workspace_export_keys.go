package wire

// DriveKey is the step: "begin", "next" or "cancel" ("" for any other),
// the event of the workspace_export machine it fires.
func (p WorkspaceExport) DriveKey() string {
	return driveKeyIn(p.Step, []string{ExportBegin, ExportNext, ExportCancel})
}

// DriveKey is the outcome: one of chunk, completed, failed and rejected
// ("" for any other).
func (r WorkspaceExportResult) DriveKey() string {
	return driveKeyIn(r.Outcome, []string{"chunk", "completed", "failed", "rejected"})
}
