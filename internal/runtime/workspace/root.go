package workspace

import "os"

// Root is the bound directory as an os.Root, for an installer that writes
// into it (runtime_prepare's file install); every path through it stays
// inside the workspace. It is safe for concurrent use and closed by Close.
func (w *Workspace) Root() *os.Root { return w.root }
