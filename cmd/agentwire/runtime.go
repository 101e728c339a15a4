package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
	"github.com/agentwire/agentwire/internal/runtime/harness/install"
	acpadapter "github.com/agentwire/agentwire/runtime/adapters/acp"
	claudeadapter "github.com/agentwire/agentwire/runtime/adapters/claude"
	codexadapter "github.com/agentwire/agentwire/runtime/adapters/codex"
	execadapter "github.com/agentwire/agentwire/runtime/adapters/exec"
	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/runtime/harness"
)

// harnessFlags collects repeated --harness values (and --environment ones).
type harnessFlags []string

func (h *harnessFlags) String() string     { return strings.Join(*h, ",") }
func (h *harnessFlags) Set(v string) error { *h = append(*h, v); return nil }

// errWorkspaceGone refuses the old single --workspace flag.
var errWorkspaceGone = errors.New("runtime: --workspace is gone: a workspace belongs to one Environment; " +
	"register it with Core (agentwire env create --device D) and pass --environment ID=DIR")

// environments opens the --environment ID=DIR bindings, in order. Each
// value names one Environment (the canonical UUID Core minted) and its
// existing workspace directory; a value without '=', a non-canonical or
// repeated ID, a missing directory and a directory shared with (or nested
// in) another Environment's are refused with the flag and the value.
func environments(values []string) (*daemon.Bindings, error) {
	b := daemon.NewBindings()
	for _, v := range values {
		id, dir, ok := strings.Cut(v, "=")
		if !ok || id == "" || dir == "" {
			_ = b.Close()
			return nil, fmt.Errorf("runtime: --environment %s: want ID=DIR (the Environment ID Core minted and its workspace directory)", v)
		}
		if err := b.Add(id, dir); err != nil {
			_ = b.Close()
			return nil, fmt.Errorf("runtime: --environment %s: %w", v, err)
		}
	}
	return b, nil
}

// runRuntime runs the daemon until a signal (exit 0) or a permanent
// refusal (exit 1, with what to fix).
var runtimeCommand = subcommand{use: "runtime [flags]",
	about: "Runs the Runtime daemon of one device: it connects to Core with the device's credential, runs\n" +
		"the Turns Core places on it through the registered Harnesses, and serves the Environments given\n" +
		"with --environment. The first SIGINT or SIGTERM shuts down once every executor has closed (exit\n" +
		"0); a second one gives up those still open. A refusal only an operator can correct (a revoked\n" +
		"credential, a wrong --core) stops it with exit 1 and what to fix.",
	examples: []string{"agentwire runtime --core 127.0.0.1:8080 --device-id dev-1 --credential-file dev-1.credential",
		"agentwire runtime --device-id dev-1 --credential-file dev-1.credential --environment \"$ENV=$PWD/workspace\" --harness script=steps.json",
		"agentwire runtime --device-id dev-1 --credential-file dev-1.credential --harness codex --codex-model gpt-5.5 --codex-base-url URL --codex-key-env OPENAI_API_KEY"}}

func runRuntime(args []string, _ io.Writer, stderr io.Writer) error {
	fs := runtimeCommand.flags(stderr)
	core := fs.String("core", "", "Core's base URL, e.g. http://127.0.0.1:8080 or 127.0.0.1:8080 (default $AGENTWIRE_CORE)")
	device := fs.String("device-id", "", "this device's ID (required)")
	credFile := fs.String("credential-file", "", "file holding the device credential: the secret, or the JSON agentwire core credential issue prints (required)")
	var harnesses harnessFlags
	fs.Var(&harnesses, "harness", "adapter to register: script[=FILE] (a JSON script, docs/script-adapter.md), exec:KIND=COMMAND[:CAPFILE] (docs/exec-adapter.md), codex[=PATH] or claude[=PATH] (the Codex or Claude Code CLI, PATH or the make harnesses install), gemini[=PATH] or acp:KIND=COMMAND (an agent speaking ACP, docs/acp-adapter.md); repeatable (default: script)")
	var hc harnessConfig
	fs.StringVar(&hc.codexModel, "codex-model", "", "codex: the model Codex asks for (e.g. gpt-5.5)")
	fs.StringVar(&hc.codexBaseURL, "codex-base-url", "", "codex: the model provider's base URL (OpenAI Responses API, e.g. http://127.0.0.1:8080/v1)")
	fs.StringVar(&hc.codexKeyEnv, "codex-key-env", "", "codex: the NAME of the environment variable holding the provider's API key (never the key itself)")
	fs.StringVar(&hc.codexState, "codex-state", "", "codex: the directory of the Codex homes the adapter owns (none: STATE/codex with --state, else the user cache directory)")
	fs.StringVar(&hc.claudeModel, "claude-model", "", "claude: the model Claude Code asks for")
	fs.StringVar(&hc.claudeBaseURL, "claude-base-url", "", "claude: the Anthropic Messages API base URL (e.g. http://127.0.0.1:8080; none: Claude Code's default)")
	fs.StringVar(&hc.claudeKeyEnv, "claude-key-env", "", "claude: the NAME of the environment variable holding the API key (never the key itself)")
	fs.IntVar(&hc.claudeRetries, "claude-retries", claudeadapter.DefaultMaxRetries, "claude: how often Claude Code retries a failed model call (429, 5xx, a refused connection) before the Turn fails; with 0 the first failure ends it")
	fs.StringVar(&hc.claudeState, "claude-state", "", "claude: the directory of the Claude configuration directories the adapter owns (none: STATE/claude with --state, else the user cache directory)")
	fs.StringVar(&hc.geminiModel, "gemini-model", "", "gemini: the model Gemini CLI asks for (a named one, e.g. gemini-2.5-pro)")
	fs.StringVar(&hc.geminiBaseURL, "gemini-base-url", "", "gemini: the Gemini API base URL (e.g. http://127.0.0.1:8080; none: Gemini CLI's default)")
	fs.StringVar(&hc.geminiKeyEnv, "gemini-key-env", "", "gemini: the NAME of the environment variable holding the Gemini API key (never the key itself)")
	fs.StringVar(&hc.codexACPModel, "codex-acp-model", "", "codex-acp: the model codex-acp asks for (one Codex has metadata for, e.g. gpt-5.4)")
	fs.StringVar(&hc.codexACPBaseURL, "codex-acp-base-url", "", "codex-acp: the model provider's base URL (OpenAI Responses API, e.g. http://127.0.0.1:8080/v1)")
	fs.StringVar(&hc.codexACPKeyEnv, "codex-acp-key-env", "", "codex-acp: the NAME of the environment variable holding the provider's API key (never the key itself)")
	fs.StringVar(&hc.acpState, "acp-state", "", "gemini, codex-acp and acp: the directory of the agent homes the adapter owns (none: STATE/acp with --state, else the user cache directory)")
	var envFlags harnessFlags
	fs.Var(&envFlags, "environment", "an Environment this Runtime serves: ID=DIR, the Environment ID Core minted and its own existing workspace directory; repeatable (none: everything naming an Environment is refused)")
	wsDir := fs.String("workspace", "", "removed: a workspace belongs to one Environment; pass --environment ID=DIR")
	stateDir := fs.String("state", "", "state directory for transfer staging and installed skills and plugins (none: a temporary directory)")
	abandonAfter := fs.Duration("abandon-after", 0, "on shutdown, give up executors whose close has not succeeded after this long (0: wait until they close or a second signal)")
	idleTTL := fs.Duration("idle-expiry", 0, "how long a healthy idle executor is kept for a Turn with its configuration (0: 1h)")
	verbose := fs.Bool("v", false, "log at debug level")
	logFormat := logFormatFlag(fs)
	scale := timeScaleFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	if fs.NArg() != 0 {
		return usageError(fs, "runtime takes no arguments, got %q", fs.Args())
	}
	workspaceSet := false
	fs.Visit(func(f *flag.Flag) { workspaceSet = workspaceSet || f.Name == "workspace" })
	if workspaceSet || *wsDir != "" {
		return errWorkspaceGone
	}
	envs, err := environments(envFlags)
	if err != nil {
		return err
	}
	defer envs.Close()
	if *device == "" || *credFile == "" {
		return usageError(fs, "--device-id and --credential-file are required")
	}
	base, err := coreBase(*core)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	*core = base
	cred, err := daemon.ReadCredentialFile(*credFile, *device)
	if err != nil {
		return fmt.Errorf("runtime: --credential-file: %w", err)
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger, err := newLogger(*logFormat, stderr, level)
	if err != nil {
		return err
	}
	hc.logger = logger
	if u, err := url.Parse(*core); err == nil && u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		logger.Warn("runtime: Core is reached over plain http on another host, so the device credential crosses the network unencrypted; use an https --core", "core", *core)
	}
	reg := harness.NewRegistry()
	if len(harnesses) == 0 {
		harnesses = harnessFlags{"script"}
	}
	if hc.codexState == "" && *stateDir != "" {
		hc.codexState = filepath.Join(*stateDir, "codex")
	}
	if hc.claudeState == "" && *stateDir != "" {
		hc.claudeState = filepath.Join(*stateDir, "claude")
	}
	if hc.acpState == "" && *stateDir != "" {
		hc.acpState = filepath.Join(*stateDir, "acp")
	}
	for _, h := range harnesses {
		a, err := adapterWith(h, stderr, hc)
		if err != nil {
			return err
		}
		if err := reg.Register(a); err != nil {
			return fmt.Errorf("runtime: --harness %s: %w", h, err)
		}
	}
	clock, err := timeScaleClock(*scale)
	if err != nil {
		return err
	}
	ctx, abandon, stop := shutdownSignals(logger)
	defer stop()
	err = daemon.Run(ctx, daemon.Config{
		CoreURL: *core, DeviceID: *device, Credential: cred, Registry: reg, Clock: clock, Environments: envs, StateDir: *stateDir,
		Logger: logger, Abandon: abandon, AbandonAfter: *abandonAfter, IdleTTL: *idleTTL,
	})
	var perm *daemon.Permanent
	if errors.As(err, &perm) {
		return fmt.Errorf("runtime: %s\nto fix: %s", perm.What, perm.Fix)
	}
	if errors.Is(err, daemon.ErrAbandoned) {
		return errors.New("runtime: shutdown abandoned executors whose close had not succeeded; their native resources may still exist")
	}
	return err
}

// shutdownSignals: the first SIGTERM or SIGINT ends ctx (a shutdown that
// waits for every owned executor to close); a second one closes abandon,
// the operator's explicit choice to give up what is still owned
// (daemon-protocol.txt:118).
func shutdownSignals(logger *slog.Logger) (ctx context.Context, abandon <-chan struct{}, stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	ab := make(chan struct{})
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 0; n < 2; n++ {
			select {
			case sig := <-sigs:
				if n == 0 {
					logger.Info("signal received: shutting down; a second signal abandons executors that have not closed", "signal", sig.String())
					cancel()
				} else {
					logger.Warn("second signal received: the operator abandons executors that have not closed", "signal", sig.String())
					close(ab)
				}
			case <-quit:
				return
			}
		}
	}()
	return ctx, ab, func() {
		signal.Stop(sigs)
		close(quit)
		<-done
		cancel()
	}
}

func adapter(spec string, stderr io.Writer) (harness.Adapter, error) {
	return adapterWith(spec, stderr, harnessConfig{})
}

// harnessConfig is what the --codex-* flags configure.
type harnessConfig struct {
	codexModel, codexBaseURL, codexKeyEnv, codexState     string
	claudeModel, claudeBaseURL, claudeKeyEnv, claudeState string
	claudeRetries                                         int
	geminiModel, geminiBaseURL, geminiKeyEnv, acpState    string
	codexACPModel, codexACPBaseURL, codexACPKeyEnv        string
	logger                                                *slog.Logger // the daemon's; every adapter logs through it
}

// log is the adapters' logger: the daemon's, or a text one on stderr.
func (hc harnessConfig) log(stderr io.Writer) *slog.Logger {
	if hc.logger != nil {
		return hc.logger
	}
	return slog.New(slog.NewTextHandler(stderr, nil))
}

// adapterWith maps one --harness value to its adapter.
func adapterWith(spec string, stderr io.Writer, hc harnessConfig) (harness.Adapter, error) {
	if rest, ok := strings.CutPrefix(spec, "exec:"); ok {
		// decision: COMMAND cannot contain ':', which separates the
		// capabilities file; without one it is COMMAND.capabilities.json.
		kind, cmdline, ok := strings.Cut(rest, "=")
		if !ok || kind == "" || cmdline == "" {
			return nil, fmt.Errorf("runtime: --harness %s: want exec:KIND=COMMAND[:CAPFILE]", spec)
		}
		command, capFile, _ := strings.Cut(cmdline, ":")
		a, err := execadapter.New(execadapter.Config{Kind: kind, Command: command, CapabilityFile: capFile,
			Logger: hc.log(stderr)})
		if err != nil {
			return nil, fmt.Errorf("runtime: --harness %s: %w", spec, err)
		}
		return a, nil
	}
	if rest, ok := strings.CutPrefix(spec, "acp:"); ok {
		kind, cmdline, ok := strings.Cut(rest, "=")
		if !ok || kind == "" || strings.TrimSpace(cmdline) == "" {
			return nil, fmt.Errorf("runtime: --harness %s: want acp:KIND=COMMAND (COMMAND split on spaces: the executable, then its arguments)", spec)
		}
		return acpAdapter(spec, kind, strings.Fields(cmdline), stderr, hc)
	}
	name, file, _ := strings.Cut(spec, "=")
	switch name {
	case "script":
		var s script.Script
		if file != "" {
			var err error
			if s, err = script.Load(file); err != nil {
				return nil, fmt.Errorf("runtime: --harness %s: %w", spec, err)
			}
		}
		return script.New(s), nil
	case "codex":
		return codexAdapter(spec, file, stderr, hc)
	case "claude":
		return claudeAdapter(spec, file, stderr, hc)
	case "gemini":
		if file == "" {
			found, err := install.Gemini()
			if err != nil {
				return nil, fmt.Errorf("runtime: --harness %s: %w (or give gemini=PATH)", spec, err)
			}
			file = found
		}
		return acpAdapter(spec, acpadapter.GeminiKind, []string{file, "--acp"}, stderr, hc)
	case "codex-acp":
		if file == "" {
			found, err := install.CodexACP()
			if err != nil {
				return nil, fmt.Errorf("runtime: --harness %s: %w (or give codex-acp=PATH, the native binary)", spec, err)
			}
			file = found
		}
		return acpAdapter(spec, acpadapter.CodexACPKind, []string{file}, stderr, hc)
	}
	return nil, fmt.Errorf("runtime: --harness %s: unknown adapter (known: script, exec:, codex, claude, gemini, codex-acp, acp:)", spec)
}

// claudeAdapter is --harness claude[=PATH]: the binary at PATH, else the
// pinned one that make harnesses installed (or on PATH). A binary of
// another version registers the kind unavailable; a missing model is
// refused before anything connects.
func claudeAdapter(spec, path string, stderr io.Writer, hc harnessConfig) (harness.Adapter, error) {
	if hc.claudeModel == "" {
		return nil, fmt.Errorf("runtime: --harness %s needs --claude-model (and, offline, --claude-base-url)", spec)
	}
	if path == "" {
		found, err := install.Claude()
		if err != nil {
			return nil, fmt.Errorf("runtime: --harness %s: %w (or give claude=PATH)", spec, err)
		}
		path = found
	}
	a, err := claudeadapter.New(claudeadapter.Config{Binary: path, Model: hc.claudeModel, BaseURL: hc.claudeBaseURL,
		APIKeyEnv: hc.claudeKeyEnv, StateDir: hc.claudeState, MaxRetries: retries(hc.claudeRetries), Logger: hc.log(stderr)})
	if err != nil {
		return nil, fmt.Errorf("runtime: --harness %s: %w", spec, err)
	}
	return a, nil
}

// acpAdapter is an ACP agent kind: command is its executable and
// arguments. The gemini kind is configured by the --gemini-* flags and the
// codex-acp kind by the --codex-acp-* flags (an executable of another
// version registers it unavailable); any other kind
// is refused with the reason, since the adapter cannot honour the
// execution controls Core requires of every Turn for an agent whose
// settings it does not know (docs/acp-adapter.md).
func acpAdapter(spec, kind string, command []string, stderr io.Writer, hc harnessConfig) (harness.Adapter, error) {
	log := hc.log(stderr)
	var agent acpadapter.Agent
	if kind == acpadapter.GeminiKind {
		if hc.geminiModel == "" {
			return nil, fmt.Errorf("runtime: --harness %s needs --gemini-model (and, offline, --gemini-base-url)", spec)
		}
		var err error
		agent, err = acpadapter.Gemini(acpadapter.GeminiConfig{Binary: command[0], Model: hc.geminiModel, BaseURL: hc.geminiBaseURL, APIKeyEnv: hc.geminiKeyEnv})
		if err != nil && agent.Kind == "" {
			return nil, fmt.Errorf("runtime: --harness %s: %w", spec, err)
		}
		if err != nil {
			log.Warn("acp adapter: the kind is declared unavailable", "kind", kind, "err", err)
		}
	} else if kind == acpadapter.CodexACPKind {
		if hc.codexACPModel == "" || hc.codexACPBaseURL == "" {
			return nil, fmt.Errorf("runtime: --harness %s needs --codex-acp-model and --codex-acp-base-url", spec)
		}
		var err error
		agent, err = acpadapter.CodexACP(acpadapter.CodexACPConfig{Binary: command[0], Model: hc.codexACPModel, BaseURL: hc.codexACPBaseURL, APIKeyEnv: hc.codexACPKeyEnv})
		if err != nil && agent.Kind == "" {
			return nil, fmt.Errorf("runtime: --harness %s: %w", spec, err)
		}
		if err != nil {
			log.Warn("acp adapter: the kind is declared unavailable", "kind", kind, "err", err)
		}
	} else {
		agent = acpadapter.Agent{Kind: kind, Command: command[0], Args: command[1:], Available: true}
	}
	a, err := acpadapter.New(acpadapter.Config{Agent: agent, StateDir: hc.acpState, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("runtime: --harness %s: %w", spec, err)
	}
	return a, nil
}

// retries is --claude-retries as Config.MaxRetries: 0 there means the
// default, and none is negative.
func retries(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// codexAdapter is --harness codex[=PATH]: the binary at PATH, else the
// pinned one that make harnesses installed (or on PATH). A binary of
// another version registers the kind unavailable; a missing model or base
// URL is refused before anything connects.
func codexAdapter(spec, path string, stderr io.Writer, hc harnessConfig) (harness.Adapter, error) {
	if hc.codexModel == "" || hc.codexBaseURL == "" {
		return nil, fmt.Errorf("runtime: --harness %s needs --codex-model and --codex-base-url", spec)
	}
	if path == "" {
		found, err := install.Codex()
		if err != nil {
			return nil, fmt.Errorf("runtime: --harness %s: %w (or give codex=PATH)", spec, err)
		}
		path = found
	}
	a, err := codexadapter.New(codexadapter.Config{Binary: path, Model: hc.codexModel, BaseURL: hc.codexBaseURL,
		APIKeyEnv: hc.codexKeyEnv, StateDir: hc.codexState, Logger: hc.log(stderr)})
	if err != nil {
		return nil, fmt.Errorf("runtime: --harness %s: %w", spec, err)
	}
	return a, nil
}

// loopbackHost reports whether host names this machine.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
