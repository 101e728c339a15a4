package execution

// AdmissionRecords is how many admission records the Session keeps (tests).
func (s *Session) AdmissionRecords() int { return len(s.admissions) }

// Records counts the Session's per-instance records (tests): admissions,
// Runs, open questions and workspace reads.
func (s *Session) Records() [4]int {
	return [4]int{len(s.admissions), len(s.runs), s.asks.Len(), s.reads.Len()}
}
