package execution

// AdmissionRecords is how many admission records the Session keeps (tests).
func (s *Session) AdmissionRecords() int { return len(s.admissions) }
