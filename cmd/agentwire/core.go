package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentwire/agentwire/core/placement"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/postgres"
	"github.com/agentwire/agentwire/core/store/sqlite"
	"github.com/agentwire/agentwire/internal/core/agent"
	"github.com/agentwire/agentwire/internal/core/console"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/core/server"
	"github.com/agentwire/agentwire/internal/core/vault"
)

const coreUsage = `usage: agentwire core <command> [flags]

commands:
  serve        run Core: agentwire core serve --listen 127.0.0.1:PORT --data DIR [--store postgres://...] [--public-url URL]
  credential   issue, list or revoke credentials: agentwire core credential issue|list|revoke --data DIR ...
  devices      list the device registry: agentwire core devices --data DIR
  device       give a device to a project or revoke it: agentwire core device assign|revoke --data DIR --device D ...
               (assign: for devices recorded before devices had projects; a device never changes project)
`

func runCore(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, coreUsage)
		return errUsage
	}
	switch args[0] {
	case "serve":
		return runCoreServe(args[1:], stdout, stderr)
	case "credential":
		return runCoreCredential(args[1:], stdout, stderr)
	case "devices":
		return runCoreDevices(args[1:], stdout, stderr)
	case "device":
		return runCoreDevice(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, coreUsage)
		return nil
	}
	fmt.Fprintf(stderr, "agentwire core: unknown command %q\n\n%s", args[0], coreUsage)
	return errUsage
}

var coreServeCommand = subcommand{use: "core serve [flags]",
	about: "Runs Core: the public API and the Runtimes' WebSocket on one listener, its store in --data.\n" +
		"It runs until SIGINT or SIGTERM, then closes the connections and exits 0.",
	examples: []string{"agentwire core serve --listen 127.0.0.1:8080 --data data",
		"agentwire core serve --listen :8080 --data /var/lib/agentwire --public-url https://core.example",
		"agentwire core serve --listen :8080 --data /var/lib/agentwire --store postgres://agentwire@db.internal:5432/agentwire?sslmode=verify-full"}}

func runCoreServe(args []string, stdout, stderr io.Writer) error {
	fs := coreServeCommand.flags(stderr)
	listen := fs.String("listen", "127.0.0.1:8080", "address to listen on")
	placementTimeout := fs.Duration("placement-timeout", gateway.DefaultPlacementTimeout, "how long a queued Turn waits for a device of its project that declares what it requires before it fails unplaceable")
	placementPolicy := fs.String("placement", "by-device-id", "which eligible device runs a Turn: by-device-id (the first by ID, so a Session's Turns stay on one device while it has room) or least-loaded (the one with the fewest admitted Turns)")
	stallTimeout := fs.Duration("stall-timeout", gateway.DefaultStallTimeout, "how long a running Turn's Run may send nothing (heartbeats do not count, nor time waiting for an answer) before Core cancels it with cause stalled; 0 disables it")
	data := fs.String("data", "", "data directory, created if missing: the embedded store lives here, and with --store too the Vault key and upload bodies (required)")
	dsn := storeFlag(fs)
	public := fs.String("public-url", "", "base URL Runtimes reach Core at (default: http:// and the listen address)")
	leaseTTL := fs.Duration("lease-ttl", gateway.DefaultLeaseTTL, "with --store: how long a device's owner lease outlives a replica that stopped renewing it (it renews every third of this); the failover time of the Turns a dead replica was running (docs/deployment.md)")
	replicaURL := fs.String("replica-url", "", "with --store: the URL the other Core replicas on the database reach this one's API at, to forward a request that needs a device connected here (default: http:// and the listen address; docs/deployment.md)")
	scale := timeScaleFlag(fs)
	transcriptFile := fs.String("transcript", "", "append every Runtime frame, both ways, to this file as JSON lines (frames carry no credential)")
	profilesFile := fs.String("engine-profiles", "", "a JSON file of engine profiles ({\"profiles\":[...]}, docs/agents.md): each replaces the shipped profile of its agent kind")
	logFormat := logFormatFlag(fs)
	debugListen := fs.String("debug-listen", "", "serve Go's runtime profiles (/debug/pprof/) on this loopback address, e.g. 127.0.0.1:6060 (off by default)")
	maxConns := fs.Int("max-connections", server.DefaultMaxConnections, "connections Core holds open at once, Runtimes' WebSockets and event streams included; one more is answered 503 with Retry-After and closed (0: no cap)")
	maxConnsClient := fs.Int("max-connections-per-client", server.DefaultMaxConnectionsPerClient, "connections one client IP address holds open at once, loopback included (0: no cap; behind a reverse proxy every client shares its address)")
	quotas := quotaFlags(fs)
	withConsole := fs.Bool("console", true, "serve the web console at /console/ (docs/console.md); --console=false serves the API alone")
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	if fs.NArg() != 0 {
		return usageError(fs, "core serve takes no arguments, got %q", fs.Args())
	}
	if err := quotas.check(); err != nil {
		return usageError(fs, "%v", err)
	}
	if *maxConns < 0 || *maxConnsClient < 0 {
		return usageError(fs, "--max-connections and --max-connections-per-client must be 0 (no cap) or positive, got %d and %d", *maxConns, *maxConnsClient)
	}
	if *data == "" {
		return usageError(fs, "--data is required")
	}
	if err := checkStore(*dsn); err != nil {
		return usageError(fs, "%v", err)
	}
	if *replicaURL != "" {
		if u, err := url.Parse(*replicaURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageError(fs, "--replica-url %q: want an http:// or https:// URL with a host", *replicaURL)
		}
	}
	if *leaseTTL < 300*time.Millisecond {
		return usageError(fs, "--lease-ttl must be at least 300ms, got %v", *leaseTTL)
	}
	if *placementTimeout <= 0 {
		return usageError(fs, "--placement-timeout must be positive, got %v", *placementTimeout)
	}
	var policy placement.Policy
	switch *placementPolicy {
	case "by-device-id":
		policy = placement.ByDeviceID{}
	case "least-loaded":
		policy = placement.LeastLoaded{}
	default:
		return usageError(fs, "--placement %q: want by-device-id or least-loaded", *placementPolicy)
	}
	if *stallTimeout < 0 {
		return usageError(fs, "--stall-timeout must be 0 (disabled) or positive, got %v", *stallTimeout)
	}
	if *stallTimeout == 0 {
		*stallTimeout = -1 // gateway.Config: negative disables
	}
	profiles := agent.DefaultProfiles()
	if *profilesFile != "" {
		var err error
		if profiles, err = agent.LoadProfiles(*profilesFile); err != nil {
			return err
		}
	}
	clock, err := timeScaleClock(*scale)
	if err != nil {
		return err
	}
	var transcript io.Writer
	if *transcriptFile != "" {
		f, err := os.OpenFile(*transcriptFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		transcript = f
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *data != "" {
		release, err := sqlite.Lock(*data)
		if err != nil {
			return err
		}
		defer release()
	}
	st, err := openStore(ctx, *data, *dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	// decision: the data directory's lock keeps its uploads and key to one
	// Core; a PostgreSQL store takes no lock, since any number of Core
	// replicas may serve one database (docs/deployment.md): each records
	// its device leases there, and reconciles only what its own dead
	// leases, or expired ones, held (internal/core/gateway/lease.go).
	_, shared := st.(*postgres.Store)
	tcp, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	ln := &server.LimitListener{Listener: tcp, Max: *maxConns, PerClient: *maxConnsClient}
	base := "http://" + ln.Addr().String()
	if *public == "" {
		*public = base
	}
	if *replicaURL == "" {
		*replicaURL = base
	}
	log, err := newLogger(*logFormat, stderr, slog.LevelInfo)
	if err != nil {
		return err
	}
	if err := warnUnowned(ctx, st, log); err != nil {
		return err
	}
	if *debugListen != "" {
		stopDebug, err := serveDebug(*debugListen, log)
		if err != nil {
			return err
		}
		defer stopDebug()
	}
	key, err := vault.LoadKey(filepath.Join(*data, vault.KeyFile))
	if err != nil {
		return err
	}
	sealer, err := vault.New(key)
	if err != nil {
		return err
	}
	// Upload bodies wait here while they arrive; a file left by a Core
	// that stopped mid-upload belongs to no request any more.
	uploads := filepath.Join(*data, "uploads")
	if err := os.RemoveAll(uploads); err != nil {
		return fmt.Errorf("core serve: clear %s: %w", uploads, err)
	}
	if err := os.MkdirAll(uploads, 0o700); err != nil {
		return fmt.Errorf("core serve: create %s: %w", uploads, err)
	}
	srv := server.New(server.Config{Store: st, Placement: policy, PublicURL: *public, Logger: log, Clock: clock, Transcript: transcript, PlacementTimeout: *placementTimeout, StallTimeout: *stallTimeout, Profiles: profiles, Sealer: sealer,
		Quotas: quotas.api(), JournalLimit: *quotas.journalBytes, UploadDir: uploads, Replica: gateway.Replica{URL: *replicaURL, Shared: shared, LeaseTTL: *leaseTTL, RenewInterval: *leaseTTL / 3}})
	// decision: headers within 10 s and 64 KiB, and a keep-alive
	// connection idle for 2 minutes is closed; no whole-request read or
	// write timeout, since event streams and uploads are long by design:
	// the API sets each route class's deadlines itself
	// (core/api/deadlines.go), and the listener caps the connections
	// (server.LimitListener).
	var handler http.Handler = srv
	if *withConsole {
		con, err := console.New(console.Config{API: srv, Auth: srv.Authenticator(), Store: st, Now: clock.Now, Logger: log, Secure: strings.HasPrefix(*public, "https://")})
		if err != nil {
			return err
		}
		mux := http.NewServeMux()
		con.Register(mux)
		mux.Handle("/", srv)
		handler = mux
	}
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	fmt.Fprintf(stdout, "agentwire core: listening on %s\n", base)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		srv.Close()
		return err
	case <-ctx.Done():
	}
	log.Info("core: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.BeginShutdown() // event streams end, Runtimes get a close frame
	err = hs.Shutdown(sctx)
	srv.Close() // hijacked WebSockets are not the http.Server's to close
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return err
}

// issued is what `credential issue` prints: the only time the secret is
// shown.
type issued struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	DeviceID string `json:"device_id,omitempty"`
	Project  string `json:"project,omitempty"`
	Secret   string `json:"secret,omitempty"`
	// SecretFile is where --out wrote the secret, which is then not printed.
	SecretFile string `json:"secret_file,omitempty"`
}

const coreCredentialUsage = `usage: agentwire core credential issue|list|revoke [flags] ...

commands:
  issue    issue a device credential, a project API key or the administration key
  list     list the credentials (never their secrets)
  revoke   revoke one credential by its ID

Run "agentwire core credential <command> -h" for one command's flags and examples.`

var coreCredentialCommands = map[string]subcommand{
	"issue": {use: "core credential issue [flags]",
		about: "Issues a credential in Core's store and prints it as JSON; the secret is shown this once. With\n" +
			"--out the secret goes to a new 0600 file instead and is never printed.",
		examples: []string{"agentwire core credential issue --data data --kind project --project demo --out project.key",
			"agentwire core credential issue --data data --kind device --device dev-1 --project demo --out dev-1.credential"}},
	"list": {use: "core credential list [flags]",
		about:    "Lists every credential of Core's store, revoked ones too, as a table (local times) or JSON Lines.",
		examples: []string{"agentwire core credential list --data data", "agentwire core credential list --data data --json"}},
	"revoke": {use: "core credential revoke [flags] ID",
		about:    "Revokes one credential: a device's live connection closes, an API key stops working at once.",
		examples: []string{"agentwire core credential revoke --data data cred_123"}},
}

func runCoreCredential(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, coreCredentialUsage)
		return errUsage
	}
	sub := args[0]
	if oneOf(sub, "-h", "--help", "help") {
		fmt.Fprintln(stdout, coreCredentialUsage)
		return nil
	}
	cmd, ok := coreCredentialCommands[sub]
	if !ok {
		fmt.Fprintf(stderr, "agentwire core credential: unknown command %q\n\n%s\n", sub, coreCredentialUsage)
		return errUsage
	}
	fs := cmd.flags(stderr)
	data := fs.String("data", "", "Core's data directory (required without --store)")
	dsn := storeFlag(fs)
	var kind, device, project, out *string
	asJSON := new(bool)
	if sub == "list" {
		asJSON = fs.Bool("json", false, "print the credentials as JSON Lines (times in RFC 3339) instead of a table")
	}
	if sub == "issue" {
		kind = fs.String("kind", "", "device, project or admin (required)")
		device = fs.String("device", "", "the device a device credential is for")
		project = fs.String("project", "", "the project of a project API key, or the project that owns a device credential's device")
		out = fs.String("out", "", "write the secret to this new file (mode 0600) instead of printing it: a device credential as the JSON agentwire runtime --credential-file reads, an API key alone (AGENTWIRE_API_KEY=$(cat FILE))")
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return flagsDone(err)
	}
	switch {
	case *data == "" && *dsn == "":
		return usageError(fs, "--data or --store is required")
	case checkStore(*dsn) != nil:
		return usageError(fs, "%v", checkStore(*dsn))
	case sub == "revoke" && fs.NArg() != 1:
		return usageError(fs, "want one credential ID, got %d arguments", fs.NArg())
	case sub != "revoke" && fs.NArg() != 0:
		return usageError(fs, "core credential %s takes no arguments, got %q", sub, fs.Args())
	case sub == "issue" && !oneOf(*kind, "device", "project", "admin"):
		return usageError(fs, "--kind must be device, project or admin, got %q", *kind)
	}
	ctx := context.Background()
	st, err := openStore(ctx, *data, *dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	is := credential.Issuer{Store: st, Now: time.Now}
	switch sub {
	case "issue":
		if *out != "" {
			// Fail before issuing when the file cannot be created, so no
			// credential exists whose secret nobody has.
			f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return outFileError(*out, err)
			}
			defer f.Close()
			c, secret, err := is.Issue(ctx, store.CredentialKind(*kind), *device, *project)
			if err != nil {
				_ = f.Close()
				_ = os.Remove(*out)
				return err
			}
			rec := issued{ID: c.ID, Kind: string(c.Kind), DeviceID: c.DeviceID, Project: c.Project, Secret: secret.Reveal()}
			var body []byte
			if c.Kind == store.KindDevice {
				body, _ = json.Marshal(rec)
			} else {
				body = []byte(rec.Secret)
			}
			if _, err := f.Write(append(body, '\n')); err != nil {
				return fmt.Errorf("--out: %w", err)
			}
			if err := f.Close(); err != nil {
				return fmt.Errorf("--out: %w", err)
			}
			rec.Secret = ""
			rec.SecretFile = *out
			return json.NewEncoder(stdout).Encode(rec)
		}
		c, secret, err := is.Issue(ctx, store.CredentialKind(*kind), *device, *project)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(stdout)
		return enc.Encode(issued{ID: c.ID, Kind: string(c.Kind), DeviceID: c.DeviceID, Project: c.Project, Secret: secret.Reveal()})
	case "list":
		list, err := st.ListCredentials(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			for _, c := range list {
				rec := map[string]any{"id": c.ID, "kind": c.Kind, "device_id": c.DeviceID, "project": c.Project, "created_at": c.CreatedAt.UTC().Format(time.RFC3339)}
				if c.Revoked() {
					rec["revoked_at"] = c.RevokedAt.UTC().Format(time.RFC3339)
				}
				if err := enc.Encode(rec); err != nil {
					return err
				}
			}
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tKIND\tDEVICE\tPROJECT\tCREATED\tREVOKED")
		for _, c := range list {
			revoked := "-"
			if c.Revoked() {
				revoked = c.RevokedAt.Local().Format(time.DateTime)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, c.Kind, dash(c.DeviceID), dash(c.Project), c.CreatedAt.Local().Format(time.DateTime), revoked)
		}
		return tw.Flush()
	case "revoke":
		if err := is.Revoke(ctx, fs.Arg(0)); err != nil {
			if errors.Is(err, store.ErrStale) {
				return fmt.Errorf("credential %s is already revoked", fs.Arg(0))
			}
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("no credential %s", fs.Arg(0))
			}
			return err
		}
		fmt.Fprintf(stdout, "revoked %s\n", fs.Arg(0))
		return nil
	}
	return nil
}

// outFileError says why --out could not be created; nothing was issued.
func outFileError(name string, err error) error {
	switch {
	case errors.Is(err, os.ErrExist):
		return fmt.Errorf("--out %s: the file exists, and a credential file is never overwritten: choose another name or remove it; nothing was issued", name)
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("--out %s: the directory %s does not exist: create it first; nothing was issued", name, filepath.Dir(name))
	}
	return fmt.Errorf("--out %s: %w; nothing was issued", name, errors.Unwrap(err))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

var coreDevicesCommand = subcommand{use: "core devices [flags]",
	about: "Prints the device registry of Core's store (every project's devices) as JSON, read directly\n" +
		"from --data (agentwire devices asks a running Core through the API instead).",
	examples: []string{"agentwire core devices --data data"}}

func runCoreDevices(args []string, stdout, stderr io.Writer) error {
	fs := coreDevicesCommand.flags(stderr)
	data := fs.String("data", "", "data directory (required without --store)")
	dsn := storeFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	if fs.NArg() != 0 {
		return usageError(fs, "core devices takes no arguments, got %q", fs.Args())
	}
	if *data == "" && *dsn == "" {
		return usageError(fs, "--data or --store is required")
	}
	if err := checkStore(*dsn); err != nil {
		return usageError(fs, "%v", err)
	}
	ctx := context.Background()
	st, err := openStore(ctx, *data, *dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	list, err := server.DeviceViews(ctx, st, "")
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"devices": list})
}

const coreDeviceUsage = `usage: agentwire core device assign|revoke [flags]

commands:
  assign   give a device no project owns to a project (devices recorded before devices had projects)
  revoke   revoke every credential of a device, which closes its live connection

Run "agentwire core device <command> -h" for one command's flags; agentwire core devices lists the devices.`

var coreDeviceCommands = map[string]subcommand{
	"assign": {use: "core device assign [flags]",
		about: "Gives a device that no project owns to a project (a device recorded before devices had\n" +
			"projects). A device never changes project: issue a new device ID instead.",
		examples: []string{"agentwire core device assign --data data --device dev-1 --project demo"}},
	"revoke": {use: "core device revoke [flags]",
		about:    "Revokes every credential of the device: its live connection closes and it connects no more.",
		examples: []string{"agentwire core device revoke --data data --device dev-1"}},
}

func runCoreDevice(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, coreDeviceUsage)
		return errUsage
	}
	if oneOf(args[0], "-h", "--help", "help") {
		fmt.Fprintln(stdout, coreDeviceUsage)
		return nil
	}
	cmd, ok := coreDeviceCommands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "agentwire core device: unknown command %q\n\n%s\n", args[0], coreDeviceUsage)
		return errUsage
	}
	if args[0] == "revoke" {
		return runCoreDeviceRevoke(cmd, args[1:], stdout, stderr)
	}
	fs := cmd.flags(stderr)
	data := fs.String("data", "", "Core's data directory (required without --store)")
	dsn := storeFlag(fs)
	device := fs.String("device", "", "the device (required)")
	project := fs.String("project", "", "the project that owns it from now on (required)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return flagsDone(err)
	}
	switch {
	case fs.NArg() != 0:
		return usageError(fs, "core device assign takes no arguments, got %q", fs.Args())
	case *data == "" && *dsn == "":
		return usageError(fs, "--data or --store is required")
	case checkStore(*dsn) != nil:
		return usageError(fs, "%v", checkStore(*dsn))
	case *device == "" || *project == "":
		return usageError(fs, "--device and --project are required")
	}
	ctx := context.Background()
	st, err := openStore(ctx, *data, *dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	switch err := st.AssignDevice(ctx, *device, *project, time.Now()); {
	case errors.Is(err, store.ErrConflict):
		return fmt.Errorf("device %s belongs to another project; a device never changes project (issue a new device ID instead)", *device)
	case err != nil:
		return err
	}
	fmt.Fprintf(stdout, "device %s belongs to project %s (a live connection learns it at its next heartbeat)\n", *device, *project)
	return nil
}

// warnUnowned names, at start, what the tenancy migration left usable by
// no one: devices no project owns and local Environments no device hosts
// (docs/tenancy.md).
func warnUnowned(ctx context.Context, st store.Store, log *slog.Logger) error {
	devices, err := st.ListDevices(ctx)
	if err != nil {
		return err
	}
	for _, d := range devices {
		if d.Project == "" {
			log.Warn("core: device belongs to no project; no project can use it until an administrator runs: agentwire core device assign --device "+d.ID+" --project P", "device_id", d.ID)
		}
	}
	envs, err := st.ListEnvironments(ctx, "")
	if err != nil {
		return err
	}
	for _, e := range envs {
		if e.Type != "none" && e.DeviceID == "" {
			log.Warn("core: local Environment is hosted by no device (stored before Environments were registered); its Sessions take no Turns: register one with agentwire env create --device D", "environment_id", e.ID, "project", e.Project)
		}
	}
	return nil
}

// runCoreDeviceRevoke revokes every credential of a device, as credential
// revoke does one by one: its live connection is closed and it connects no
// more.
func runCoreDeviceRevoke(cmd subcommand, args []string, stdout, stderr io.Writer) error {
	fs := cmd.flags(stderr)
	data := fs.String("data", "", "Core's data directory (required without --store)")
	dsn := storeFlag(fs)
	device := fs.String("device", "", "the device whose credentials are revoked (required)")
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	switch {
	case fs.NArg() != 0:
		return usageError(fs, "core device revoke takes no arguments, got %q", fs.Args())
	case *data == "" && *dsn == "":
		return usageError(fs, "--data or --store is required")
	case checkStore(*dsn) != nil:
		return usageError(fs, "%v", checkStore(*dsn))
	case *device == "":
		return usageError(fs, "--device is required")
	}
	ctx := context.Background()
	st, err := openStore(ctx, *data, *dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	list, err := st.ListCredentials(ctx)
	if err != nil {
		return err
	}
	is := credential.Issuer{Store: st, Now: time.Now}
	revoked := 0
	for _, c := range list {
		if c.Kind != store.KindDevice || c.DeviceID != *device || c.Revoked() {
			continue
		}
		if err := is.Revoke(ctx, c.ID); err != nil && !errors.Is(err, store.ErrStale) {
			return fmt.Errorf("revoking %s: %w", c.ID, err)
		}
		revoked++
		fmt.Fprintf(stdout, "revoked %s\n", c.ID)
	}
	if revoked == 0 {
		return fmt.Errorf("device %s has no credential to revoke", *device)
	}
	return nil
}
