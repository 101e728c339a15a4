package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// awaitStopped returns once every thread of process pid is stopped. The
// kernel stops a thread group lazily: kill(2) queues SIGSTOP and wakes one
// thread, and that thread stops the others once it gets a CPU. Until then
// the other threads run, so under load a Runtime "frozen" by the signal
// alone still answered Core's frames (TestCoreKilledDuringDirectoryRead
// read 200 with preparation_status, workspace_read_result and the
// release's preparation_status in Core's transcript after the SIGSTOP).
func awaitStopped(t *testing.T, pid int) {
	t.Helper()
	poll(t, 30*time.Second, fmt.Sprintf("every thread of process %d to stop", pid), func() bool {
		stopped, err := threadsStopped(pid)
		require.NoError(t, err)
		return stopped
	})
}

// threadsStopped reports whether every thread listed in /proc/<pid>/task
// is in state T. A thread created after the listing is no hole: it joins
// the pending group stop before it runs any code of its own.
func threadsStopped(pid int) (bool, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tids, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, tid := range tids {
		stat, err := os.ReadFile(filepath.Join(dir, tid.Name(), "stat"))
		if errors.Is(err, fs.ErrNotExist) {
			continue // the thread exited since the listing
		}
		if err != nil {
			return false, err
		}
		// The state follows the command name, which is in parentheses
		// and may itself hold ") ": the last ')' ends it.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			return false, fmt.Errorf("%s/%s/stat: no state in %q", dir, tid.Name(), stat)
		}
		switch state := stat[i+2]; state {
		case 'T':
		case 'Z', 'X':
			return false, fmt.Errorf("process %d exited instead of stopping", pid)
		default:
			return false, nil
		}
	}
	return len(tids) > 0, nil
}
