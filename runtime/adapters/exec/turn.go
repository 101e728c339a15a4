package exec

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	osexec "os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"

	"github.com/agentwire/agentwire/internal/runtime/bounded"
)

// executor runs one process per Turn, one Turn at a time.
type executor struct {
	cfg       Config
	dir       string // the working directory of each Turn's process
	sessionID string
	options   options // what the agent reads of the configuration

	mu  sync.Mutex
	cur *process // the running Turn's process, nil between Turns
}

// process is one Turn's command.
type process struct {
	runID string
	decl  wire.AgentKindCapabilities // the Turn's declaration snapshot
	cmd   *osexec.Cmd
	stdin *os.File

	wmu sync.Mutex // serializes stdin lines

	mu   sync.Mutex
	open map[string]string // open interaction ID → the answer type it takes
}

// failure is a Turn failure the adapter classifies itself.
type failure struct {
	code wire.EngineFailureCode
	msg  string
}

func (f *failure) Error() string { return f.msg }

// Run starts the command, writes the Turn's input and relays its events
// until done, a failure or cancellation.
func (e *executor) Run(ctx context.Context, turn harness.Turn, emit harness.Emit) (wire.Done, error) {
	// Content the Turn's declaration cannot carry (an image on a text-only
	// agent) is refused before the process starts, never dropped
	// (daemon-protocol.txt:98).
	if err := harness.CheckInput(turn.Declaration.Capabilities, turn.Input); err != nil {
		return wire.Done{}, err
	}
	p, stdout, stderr, err := e.start(turn.RunID)
	if err != nil {
		// decision: a command that cannot start fails the Turn like any
		// other native failure (error + done), daemon-protocol.txt:104.
		_ = emit(ctx, wire.NewEngineError(boundText("exec: the agent could not start: "+err.Error()), wire.EngineServerError, 0))
		return wire.Done{}, nil
	}
	p.decl = turn.Declaration.Capabilities
	e.mu.Lock()
	e.cur = p
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.cur = nil
		e.mu.Unlock()
	}()

	lines := make(chan lineResult)
	go readLines(stdout, lines)

	t := &turnState{e: e, p: p, turn: turn, emit: emit}
	done, fail := t.relay(ctx, lines)

	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for range lines { // the agent must never block on a full stdout
		}
	}()
	mode := stopDone
	switch {
	case fail != nil:
		mode = stopFailed
	case ctx.Err() != nil:
		mode = stopCancelled
	}
	werr, killed := p.finish(e.cfg.Clock, e.cfg.Grace, mode, e.cfg.Logger.With("kind", e.cfg.Kind, "run_id", turn.RunID))
	// A descendant that left the process group may still hold stdout.
	_ = stdout.Close()
	<-drained
	if text := stderr.String(); text != "" || werr != nil {
		e.cfg.Logger.Info("exec agent exited", "kind", e.cfg.Kind, "run_id", turn.RunID, "exit", exitText(werr), "stderr", text)
	}
	if fail != nil {
		_ = emit(context.WithoutCancel(ctx), wire.NewEngineError(boundText(fail.msg), fail.code, 0))
	}
	if mode == stopCancelled && killed {
		// decision: SIGKILL cannot be handled, so the agent settled
		// nothing itself; a kill is not native settlement
		// (daemon-protocol.txt:147) and the receipt must not say applied.
		return done, fmt.Errorf("exec: the agent ignored the end of its input and SIGTERM and was killed: %w", harness.ErrCancelUnsettled)
	}
	return done, nil
}

// start launches the command with its stdin on a pipe the adapter writes
// with deadlines.
func (e *executor) start(runID string) (*process, *os.File, *bounded.Buffer, error) {
	cmd := osexec.Command(e.cfg.Command, e.cfg.Args...)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "AGENTWIRE_RUN_ID="+runID, "AGENTWIRE_SESSION_ID="+e.sessionID)
	// decision: the agent gets its own process group, so that terminating
	// the Turn reaches the children it spawned too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = e.cfg.Grace
	stderr := &bounded.Buffer{Max: e.cfg.StderrBytes}
	cmd.Stderr = stderr
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_ = inR.Close()
		_ = inW.Close()
		return nil, nil, nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	_ = inR.Close()
	_ = outW.Close()
	if err != nil {
		_ = inW.Close()
		_ = outR.Close()
		return nil, nil, nil, err
	}
	return &process{runID: runID, cmd: cmd, stdin: inW, open: map[string]string{}}, outR, stderr, nil
}

// stopMode is why a Turn's process is being ended.
type stopMode int

const (
	stopDone      stopMode = iota // the agent wrote done: it may exit on its own
	stopCancelled                 // the Turn was cancelled: the agent's own interrupt first
	stopFailed                    // the adapter failed the Turn: terminate at once
)

// finish ends the process and returns Wait's result, and whether it took
// SIGKILL. Closing stdin is the agent's own interrupt (docs/exec-adapter.md:
// the end of stdin means the Turn is over). After done or a cancellation
// the agent gets a grace to exit on its own, then SIGTERM, then after
// another grace SIGKILL; a Turn the adapter failed gets SIGTERM at once.
// Signals go to the process group, so the agent's children end with it. A
// cancellation logs every step with the Run ID.
func (p *process) finish(clock peer.Clock, grace time.Duration, mode stopMode, log *slog.Logger) (error, bool) {
	p.wmu.Lock()
	_ = p.stdin.Close()
	p.wmu.Unlock()
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	pid := p.cmd.Process.Pid
	cancelled := mode == stopCancelled
	signals := []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}
	if mode == stopFailed {
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		signals = signals[1:]
	}
	// Each grace is armed before its step is logged, so that whoever
	// reads the log and moves the clock moves this grace too.
	t := clock.NewTimer(grace)
	defer t.Stop()
	if cancelled {
		log.Info("exec: cancelling the Turn: the agent's own interrupt (its input closed)", "pgid", pid, "grace", grace.String())
	}
	for {
		select {
		case err := <-exited:
			if cancelled {
				log.Info("exec: the cancelled agent exited", "pgid", pid, "exit", exitText(err))
			}
			return err, false
		case <-t.C():
			sig := signals[0]
			signals = signals[1:]
			if len(signals) > 0 {
				t.Reset(grace)
			}
			if cancelled {
				log.Warn("exec: cancelling the Turn: signalling the agent's process group", "pgid", pid, "signal", sig.String())
			}
			_ = syscall.Kill(-pid, sig)
			if len(signals) == 0 {
				err := <-exited
				if cancelled {
					log.Warn("exec: the cancelled agent was killed", "pgid", pid, "exit", exitText(err))
				}
				return err, true
			}
		}
	}
}

// writeLine writes one JSON line on stdin within ctx's deadline (the
// daemon bounds an active input's native write, daemon-protocol.txt:128).
func (p *process) writeLine(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if dl, ok := ctx.Deadline(); ok {
		_ = p.stdin.SetWriteDeadline(dl)
	} else {
		_ = p.stdin.SetWriteDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { _ = p.stdin.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	_, err = p.stdin.Write(b)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// Steer writes an active input line (docs/exec-adapter.md).
func (e *executor) Steer(ctx context.Context, runID, inputID string, in wire.MessageInput) error {
	p := e.running(runID)
	if p == nil {
		return harness.ErrRunInactive
	}
	if err := harness.CheckSteer(p.decl, in); err != nil {
		return err
	}
	return p.writeLine(ctx, steerLine{Type: "prompt_steer", InputID: inputID, Input: in})
}

// Decide writes Core's answer to an open question; the question must be
// open and of the answer's kind.
func (e *executor) Decide(ctx context.Context, runID string, a harness.Answer) error {
	p := e.running(runID)
	if p == nil {
		return harness.ErrRunInactive
	}
	if err := harness.CheckAnswer(p.decl, a); err != nil {
		return err
	}
	var line any
	var typ string
	switch {
	case a.Permission != nil:
		typ = "permission_decision"
		line = permissionLine{Type: typ, RequestID: a.InteractionID, Approved: a.Permission.Approved != nil && *a.Permission.Approved,
			Message: a.Permission.Message, UpdatedInput: json.RawMessage(a.Permission.UpdatedInput)}
	case a.Choice != nil:
		typ = "prompt_for_user_choice_decision"
		line = choiceLine{Type: typ, AskID: a.InteractionID, QuestionAnswers: a.Choice.QuestionAnswers, Cancelled: a.Choice.Cancelled, Reason: a.Choice.Reason}
	case a.Result != nil:
		typ = "function_result"
		line = resultLine{Type: typ, CallID: a.InteractionID, Success: a.Result.Success != nil && *a.Result.Success, Content: a.Result.Content}
	default:
		return errors.New("exec: an answer with no content")
	}
	p.mu.Lock()
	want, ok := p.open[a.InteractionID]
	p.mu.Unlock()
	if !ok || want != typ {
		return fmt.Errorf("exec: no open question %q takes a %s", a.InteractionID, typ)
	}
	if err := p.writeLine(ctx, line); err != nil {
		return err
	}
	p.mu.Lock()
	delete(p.open, a.InteractionID)
	p.mu.Unlock()
	return nil
}

func (e *executor) running(runID string) *process {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cur == nil || e.cur.runID != runID {
		return nil
	}
	return e.cur
}

// Close has nothing to release between Turns: each process ends with its Turn.
func (e *executor) Close(context.Context) error { return nil }

// waiting reports whether a question of the Turn waits for Core.
func (p *process) waiting() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.open) > 0
}

func (p *process) opened(id, answerType string) {
	p.mu.Lock()
	p.open[id] = answerType
	p.mu.Unlock()
}

// lineResult is one stdout line or the read's end.
type lineResult struct {
	line []byte
	err  error
}

// readLines reads newline-terminated lines of at most wire.MaxFrameBytes.
func readLines(f *os.File, out chan<- lineResult) {
	defer close(out)
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		var line []byte
		for {
			chunk, err := br.ReadSlice('\n')
			if len(line)+len(chunk) > wire.MaxFrameBytes+1 {
				out <- lineResult{err: errLineTooLong}
				return
			}
			line = append(line, chunk...)
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil {
				if len(line) > 0 {
					out <- lineResult{err: errPartialLine}
				} else {
					out <- lineResult{err: err}
				}
				return
			}
			break
		}
		out <- lineResult{line: line}
	}
}

var (
	errLineTooLong = fmt.Errorf("a line is longer than %d bytes", wire.MaxFrameBytes)
	errPartialLine = errors.New("the output ended inside a line")
)

func exitText(err error) string {
	if err == nil {
		return "0"
	}
	return err.Error()
}

// boundText keeps error texts short on the wire.
func boundText(s string) string {
	const max = 512
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
