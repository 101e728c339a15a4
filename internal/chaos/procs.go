package chaos

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one peer process (Core or a Runtime) the driver starts, kills
// and starts again with the same arguments. Its output is appended to one
// log file across restarts.
type proc struct {
	name  string
	bin   string
	args  func(gen int) []string // the arguments of generation gen (1, 2, ...)
	env   []string
	log   string
	ready string // a stdout line prefix that says the process is serving ("": none)

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	gen    int
}

// start starts the next generation and, when ready is set, waits (at most
// 60 s) for its line.
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	fmt.Fprintf(logf, "=== chaos: %s generation %d starts at %s\n", p.name, p.gen, time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin, p.args(p.gen)...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		_ = logf.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited
	lines := bufio.NewReader(out)
	if p.ready != "" {
		got := make(chan error, 1)
		go func() {
			line, err := lines.ReadString('\n')
			if err == nil && !strings.HasPrefix(line, p.ready) {
				err = fmt.Errorf("unexpected first line %q", line)
			}
			got <- err
		}()
		var err error
		select {
		case err = <-got:
		case <-time.After(60 * time.Second):
			err = errors.New("not ready after 60 s")
		}
		if err != nil {
			// Not serving: it must not outlive the run.
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
			return fmt.Errorf("start %s (see %s): %w", p.name, p.log, err)
		}
	}
	go func() { _, _ = io.Copy(io.Discard, lines) }()
	return nil
}

// kill SIGKILLs the process (no shutdown code runs) and waits for it.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// stop ends the process with SIGTERM, SIGKILL after grace, and waits.
func (p *proc) stop(grace time.Duration) {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
}

// generation is the number of times the process was started.
func (p *proc) generation() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gen
}

// freeAddr reserves a loopback port for Core, which must keep its address
// across restarts (the proxy dials it).
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("reserve a port: %w", err)
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// child picks one live child process of the current generation (an agent
// the Runtime started), by reading /proc; 0 when it has none. Only
// processes this run started are ever picked.
func (p *proc) child(rng *rand.Rand) int {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return 0
	}
	parent := cmd.Process.Pid
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var kids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after
		// its closing parenthesis.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(parent) {
			kids = append(kids, pid)
		}
	}
	if len(kids) == 0 {
		return 0
	}
	slices.Sort(kids)
	return kids[rng.IntN(len(kids))]
}
