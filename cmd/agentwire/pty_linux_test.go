package main

import (
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: what is written to term is read from
// tty, which a child takes as its standard input to see a terminal there.
// Echo is off, so nothing has to read term's output.
func openPTY(t *testing.T) (term, tty *os.File) {
	t.Helper()
	term, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { _ = term.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(term.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(term.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tty.Close() })
	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	require.NoError(t, err)
	tio.Lflag &^= unix.ECHO
	require.NoError(t, unix.IoctlSetTermios(int(tty.Fd()), unix.TCSETS, tio))
	return term, tty
}
