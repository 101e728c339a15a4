package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFile is the file a serving Core holds locked in its data directory.
const LockFile = "core.lock"

// InUseError is a data directory another Core serves.
type InUseError struct {
	Dir string
	PID int // 0 when the holder wrote none
}

func (e *InUseError) Error() string {
	holder := "another process"
	if e.PID > 0 {
		holder = "process " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("the data directory %s is in use by another Core (%s): two Cores on one store would each take the other's devices and fail its Turns", e.Dir, holder)
}

// Lock takes the data directory for one serving Core: an exclusive lock
// on dir/core.lock (released by the returned func, or when the process
// ends however it ends), with the holder's PID written in it.
//
// decision: Core's reconciliation at start releases every device and
// fails every running Turn of the store, which is right only for the one
// Core that owns it; a second Core on the same directory is refused
// before it touches anything. Administration commands (credential issue,
// device revoke) take no lock: they are meant to run beside the Core.
func Lock(dir string) (release func() error, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking the data directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return nil, &InUseError{Dir: dir, PID: pid}
		}
		return nil, fmt.Errorf("locking the data directory: %w", err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f.Close, nil
}
