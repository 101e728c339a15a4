// Command embed-core is an agentwire Core inside a program of its own: its
// own store (memory, with every Turn's end written to an audit log), its
// own authenticator (a fixed table of keys from the environment, no
// credential table), and Core's routes mounted on its own mux beside a
// /healthz of its own, served by its own http.Server.
package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/agentwire/agentwire/core"
	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
)

// auditStore is Core's state in memory; it logs every Turn that ends.
type auditStore struct {
	store.Store
	log *slog.Logger
}

func (s auditStore) MoveTurn(ctx context.Context, m store.TurnMove) error {
	err := s.Store.MoveTurn(ctx, m)
	if err == nil && m.To.Terminal() {
		s.log.Info("audit: turn ended", "turn", m.TurnID, "state", m.To)
	}
	return err
}

func (s auditStore) Commit(ctx context.Context, b store.Batch) (store.BatchResult, error) {
	r, err := s.Store.Commit(ctx, b)
	for i, f := range b.Finishes {
		if err == nil && i < len(r.Finishes) && r.Finishes[i] == nil {
			s.log.Info("audit: turn ended", "turn", f.TurnID, "state", f.To)
		}
	}
	return r, err
}

// keys authenticates by a fixed table; revoking a device drops its key.
type keys struct {
	mu    sync.Mutex
	table map[credential.Secret]store.Credential
}

func (k *keys) Authenticate(_ context.Context, s credential.Secret, kind store.CredentialKind) (store.Credential, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for secret, c := range k.table {
		if subtle.ConstantTimeCompare([]byte(secret), []byte(s)) == 1 {
			if c.Kind != kind {
				return store.Credential{}, credential.ErrWrongKind
			}
			return c, nil
		}
	}
	if s == "" {
		return store.Credential{}, credential.ErrMissing
	}
	return store.Credential{}, credential.ErrBad
}

func (k *keys) AuthenticateDevice(ctx context.Context, s credential.Secret, device string) (store.Credential, error) {
	c, err := k.Authenticate(ctx, s, store.KindDevice)
	if err == nil && c.DeviceID != device {
		return store.Credential{}, credential.ErrWrongDevice
	}
	return c, err
}

func (k *keys) Valid(_ context.Context, c store.Credential) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, have := range k.table {
		if have.ID == c.ID {
			return nil
		}
	}
	return credential.ErrBad
}

func (k *keys) RevokeDevice(_ context.Context, device string) ([]string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	revoked := []string{}
	for secret, c := range k.table {
		if c.Kind == store.KindDevice && c.DeviceID == device {
			delete(k.table, secret)
			revoked = append(revoked, c.ID)
		}
	}
	return revoked, nil
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve on")
	flag.Parse()
	if err := run(*listen, os.Getenv("EMBED_PROJECT_KEY"), os.Getenv("EMBED_DEVICE_KEY")); err != nil {
		log.Fatal(err)
	}
}

// run serves project "embed" (its key projectKey) and its one device,
// dev-1 (deviceKey), until SIGINT or SIGTERM.
func run(listen, projectKey, deviceKey string) error {
	if projectKey == "" || deviceKey == "" {
		return errors.New("embed-core: set EMBED_PROJECT_KEY and EMBED_DEVICE_KEY")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	st := auditStore{Store: memory.New(), log: logger}
	// A device carries a project's work only once it belongs to it.
	if err := st.AssignDevice(ctx, "dev-1", "embed", time.Now()); err != nil {
		return err
	}
	auth := &keys{table: map[credential.Secret]store.Credential{
		credential.Secret(projectKey): {ID: "key-embed", Kind: store.KindProject, Project: "embed"},
		credential.Secret(deviceKey):  {ID: "key-dev-1", Kind: store.KindDevice, DeviceID: "dev-1", Project: "embed"},
	}}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	c, err := core.New(core.Config{Store: st, Auth: auth, PublicURL: base, Logger: logger})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	c.Register(mux)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		c.Close()
		shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	fmt.Println("embed-core: listening on", base)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
