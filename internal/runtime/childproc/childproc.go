// Package childproc runs a CLI adapter's native process: its own process
// group, stdin and stdout on pipes the adapter owns, stderr kept (bounded,
// without colour codes) for the log, and a stop that asks, then signals
// the whole group.
package childproc

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"os"
	osexec "os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/bounded"
)

// Process is one native child in its own process group.
type Process struct {
	cmd    *osexec.Cmd
	Stdin  *os.File
	Stdout *os.File
	Stderr *bounded.Buffer

	exited     chan struct{} // closed once Wait returned
	waitErr    error
	stderrDone chan struct{}
}

// Start runs binary with args in dir with env, keeping at most stderrBytes
// of its stderr. Callers keep secrets out of args (they show in process
// listings) and pass them in env.
func Start(binary string, args, env []string, dir string, stderrBytes int) (*Process, error) {
	cmd := osexec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = env
	// decision: the child gets its own process group, so that stopping it
	// reaches every command and helper it spawned (issue 17 §3: Close ends
	// it and kills the group).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	closeAll(inR, outW, errW)
	if err != nil {
		closeAll(inW, outR, errR)
		return nil, err
	}
	p := &Process{cmd: cmd, Stdin: inW, Stdout: outR, Stderr: &bounded.Buffer{Max: stderrBytes},
		exited: make(chan struct{}), stderrDone: make(chan struct{})}
	go func() {
		defer close(p.stderrDone)
		defer errR.Close()
		sc := bufio.NewReaderSize(errR, 16<<10)
		for {
			line, err := sc.ReadString('\n')
			if line != "" {
				_, _ = p.Stderr.Write([]byte(StripANSI(line)))
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// Pid is the child's process ID (its group's too).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Alive reports whether the process has not exited.
func (p *Process) Alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Stop ends the process: the caller closed stdin already (the polite
// request to exit); after grace the group gets SIGTERM, after another
// grace SIGKILL. Once the leader exited, the group is killed anyway, so no
// command it started outlives it. stop returns the leader's exit error, or
// ctx's error when ctx ended before the leader exited (then the process
// stays owned).
func (p *Process) Stop(ctx context.Context, grace time.Duration) error {
	pid := p.cmd.Process.Pid
	t := time.NewTimer(grace)
	defer t.Stop()
	signals := []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}
	for {
		select {
		case <-p.exited:
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = p.Stdout.Close()
			// The stderr reader ends when every holder of the pipe closed it;
			// the group was just killed, so that is soon, but a descendant that
			// left the group may keep it: do not wait past ctx.
			select {
			case <-p.stderrDone:
			case <-ctx.Done():
			}
			return p.waitErr
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if len(signals) == 0 {
				t.Reset(grace)
				continue
			}
			_ = syscall.Kill(-pid, signals[0])
			signals = signals[1:]
			t.Reset(grace)
		}
	}
}

// Terminate ends the process group of a Harness whose own interrupt was
// not confirmed: SIGTERM to the group, then, unless the leader exits within
// grace, SIGKILL. Each step is logged through log, which carries the Run
// ID. It returns once the leader exited. The caller reports the
// cancellation unsettled either way: an exit on a signal does not prove it
// (daemon-protocol.txt:147).
func (p *Process) Terminate(clock peer.Clock, grace time.Duration, log *slog.Logger) {
	pid := p.cmd.Process.Pid
	// The grace is armed before the step is logged, so whoever reads the
	// log and moves the clock moves the grace too.
	t := clock.NewTimer(grace)
	defer t.Stop()
	log.Warn("cancelling the Turn: signalling the Harness's process group", "pgid", pid, "signal", syscall.SIGTERM.String(), "grace", grace.String())
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-p.exited:
		log.Info("the cancelled Harness exited", "pgid", pid, "exit", p.ExitText())
		_ = syscall.Kill(-pid, syscall.SIGKILL) // what it left in its group
		return
	case <-t.C():
	}
	log.Warn("cancelling the Turn: signalling the Harness's process group", "pgid", pid, "signal", syscall.SIGKILL.String())
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-p.exited
	log.Warn("the cancelled Harness was killed", "pgid", pid, "exit", p.ExitText())
}

// Kill kills the group at once (a connection that can no longer be used).
func (p *Process) Kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

// ExitText describes how the process ended ("running" before).
func (p *Process) ExitText() string {
	select {
	case <-p.exited:
	default:
		return "running"
	}
	if p.waitErr == nil {
		return "exit 0"
	}
	var ee *osexec.ExitError
	if errors.As(p.waitErr, &ee) {
		return ee.String()
	}
	return p.waitErr.Error()
}

// StripANSI removes terminal colour sequences (ESC [ … letter), which CLIs'
// log lines carry.
func StripANSI(s string) string {
	if !strings.Contains(s, "\x1b[") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
