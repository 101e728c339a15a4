package execution

// exportRun is the one workspace export of this connection.
type exportRun struct{}
