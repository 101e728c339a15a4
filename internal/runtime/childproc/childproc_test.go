package childproc

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func processGone(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == syscall.ESRCH
}

// Close reaches the whole process group: a child the leader started in
// the background is killed with it, and stderr is kept bounded.
func TestProcessStopKillsTheGroup(t *testing.T) {
	script := `echo "$$ log line" >&2; sleep 300 & echo $!; exec sleep 300`
	p, err := Start("/bin/sh", []string{"-c", script}, os.Environ(), t.TempDir(), 8)
	require.NoError(t, err)
	line, err := bufio.NewReader(p.Stdout).ReadString('\n')
	require.NoError(t, err)
	child, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	leader := p.Pid()
	_ = p.Stdin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = p.Stop(ctx, 100*time.Millisecond)
	assert.False(t, p.Alive())
	assert.True(t, processGone(leader))
	// The background child is reaped by init once killed; it must not
	// answer signals as a live process for long.
	require.Eventually(t, func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
		return err != nil || strings.Contains(string(b), ") Z ")
	}, 5*time.Second, 10*time.Millisecond, "the group's other member was killed")
	assert.LessOrEqual(t, len(p.Stderr.String()), 8+len(" …(truncated)"))
	assert.Contains(t, p.Stderr.String(), "…(truncated)")
}

// A process that exits on stdin EOF needs no signal.
func TestProcessStopOnEOF(t *testing.T) {
	p, err := Start("/bin/cat", nil, os.Environ(), t.TempDir(), 1024)
	require.NoError(t, err)
	require.NoError(t, p.Stdin.Close())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, p.Stop(ctx, 10*time.Second))
	assert.Equal(t, "exit 0", p.ExitText())
}

func TestStripANSI(t *testing.T) {
	assert.Equal(t, "2026 ERROR codex: x\n", StripANSI("\x1b[2m2026\x1b[0m \x1b[31mERROR\x1b[0m codex: x\n"))
}
