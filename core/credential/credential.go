// Package credential issues, checks and revokes Core's credentials: device
// credentials (one device each, for the Runtime connection), project API
// keys (the public API) and the administration key. Only a hash of each
// secret is stored; the secret is shown once, when issued.
package credential

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/agentwire/agentwire/core/store"
)

// Secret is a credential's secret. It never prints itself: String, a
// %v verb and a slog record all show "[redacted]", so a secret that
// reaches a log by mistake is still not written.
type Secret string

// String redacts the secret.
func (Secret) String() string { return "[redacted]" }

// GoString redacts the secret for %#v.
func (Secret) GoString() string { return "[redacted]" }

// LogValue redacts the secret in slog records.
func (Secret) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// Reveal returns the secret's text, for the one place that must show or
// send it (the issue command's output, an Authorization header).
func (s Secret) Reveal() string { return string(s) }

// prefixes make a leaked secret recognisable (and scannable) by kind.
var prefixes = map[store.CredentialKind]string{
	store.KindDevice:  "awd_",
	store.KindProject: "awp_",
	store.KindAdmin:   "awa_",
}

// Errors of Authenticate. The gateway and the API map them to HTTP codes.
var (
	// ErrMissing: no credential was presented.
	ErrMissing = errors.New("credential: missing")
	// ErrBad: the credential is unknown or revoked.
	ErrBad = errors.New("credential: unknown or revoked")
	// ErrWrongKind: a valid credential of another kind.
	ErrWrongKind = errors.New("credential: wrong kind")
	// ErrWrongDevice: a device credential issued for another device.
	ErrWrongDevice = errors.New("credential: issued for another device")
)

// Hash is what the store keeps of a secret.
//
// decision: a plain SHA-256 suffices: secrets are 256 random bits, so
// there is nothing for a slow password hash to protect against, and the
// lookup by hash stays one indexed read on every connection.
func Hash(s Secret) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Authenticator decides whose a presented secret is. Core asks it on every
// Runtime bootstrap and connection and on every public API request, and
// asks again (Valid) while a connection or event stream stays open, so a
// revocation takes effect on what is already open. Issuer is agentwire's
// own; an embedder may put its own identity system behind it.
//
// What Core relies on: the Credential returned names its Kind, its
// Project (a project key's project) and, for a device, its DeviceID;
// ID identifies it to Valid and in logs. Errors are ErrMissing, ErrBad,
// ErrWrongKind and ErrWrongDevice (wrapped or not) for a refusal; any other
// error is Core's to report as its own failure (500), never as a refusal.
type Authenticator interface {
	// Authenticate returns the credential of secret s if it is valid and
	// of kind.
	Authenticate(ctx context.Context, s Secret, kind store.CredentialKind) (store.Credential, error)
	// AuthenticateDevice returns the device credential of s if it was
	// issued for deviceID (daemon-protocol.txt:11: no other kind of
	// credential ever opens a Runtime connection).
	AuthenticateDevice(ctx context.Context, s Secret, deviceID string) (store.Credential, error)
	// Valid reports whether c, authenticated earlier, still is: ErrBad
	// once it was revoked.
	Valid(ctx context.Context, c store.Credential) error
	// RevokeDevice revokes every credential of the device and returns the
	// IDs it revoked (POST /api/v1/devices/{id}/revoke).
	RevokeDevice(ctx context.Context, deviceID string) ([]string, error)
}

// Issuer issues and checks agentwire's own credentials, kept as hashes in
// a store.Credentials.
type Issuer struct {
	Store store.Credentials
	Now   func() time.Time
	// Devices assigns a device to the project its credential is issued
	// for; nil uses Store when it is also a device registry (a
	// store.Store is: memory and sqlite keep both halves).
	Devices DeviceAssigner
}

// DeviceAssigner is the part of store.Store that issuing a device
// credential writes: the device's project.
type DeviceAssigner interface {
	AssignDevice(ctx context.Context, deviceID, project string, at time.Time) error
}

var _ Authenticator = Issuer{}

// Issue creates a credential of kind. A device credential needs deviceID,
// a project API key needs project; the administration key needs neither.
func (is Issuer) Issue(ctx context.Context, kind store.CredentialKind, deviceID, project string) (store.Credential, Secret, error) {
	prefix, ok := prefixes[kind]
	if !ok {
		return store.Credential{}, "", fmt.Errorf("credential: kind %q is not device, project or admin", kind)
	}
	switch {
	case kind == store.KindDevice && deviceID == "":
		return store.Credential{}, "", errors.New("credential: a device credential needs a device ID")
	case kind != store.KindDevice && deviceID != "":
		return store.Credential{}, "", fmt.Errorf("credential: a %s credential is not issued for a device", kind)
	case kind == store.KindProject && project == "":
		return store.Credential{}, "", errors.New("credential: a project API key needs a project")
	case kind == store.KindDevice && project == "":
		// decision: a device belongs to the project it is issued for
		// (docs/tenancy.md); daemon-protocol.txt:19 makes no credential
		// authority over another project's Environment.
		return store.Credential{}, "", errors.New("credential: a device credential needs the project that owns the device (--project)")
	case kind == store.KindAdmin && project != "":
		return store.Credential{}, "", errors.New("credential: the administration key belongs to no project")
	}
	now := is.Now().UTC().Truncate(time.Millisecond)
	if kind == store.KindDevice {
		devices := is.Devices
		if devices == nil {
			devices, _ = is.Store.(DeviceAssigner)
		}
		if devices == nil {
			return store.Credential{}, "", fmt.Errorf("credential: issuing a device credential needs a device registry (Issuer.Devices); %T is none", is.Store)
		}
		if err := devices.AssignDevice(ctx, deviceID, project, now); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return store.Credential{}, "", fmt.Errorf("credential: device %s belongs to another project; a device never changes project", deviceID)
			}
			return store.Credential{}, "", fmt.Errorf("credential: assign device %s: %w", deviceID, err)
		}
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return store.Credential{}, "", err
	}
	secret := Secret(prefix + base64.RawURLEncoding.EncodeToString(raw[:]))
	c := store.Credential{
		ID: NewID("cred"), Kind: kind, DeviceID: deviceID, Project: project,
		Hash: Hash(secret), CreatedAt: now,
	}
	if err := is.Store.CreateCredential(ctx, c); err != nil {
		return store.Credential{}, "", err
	}
	return c, secret, nil
}

// Authenticate finds the unrevoked credential of a secret and checks its
// kind.
func (is Issuer) Authenticate(ctx context.Context, s Secret, kind store.CredentialKind) (store.Credential, error) {
	if s == "" {
		return store.Credential{}, ErrMissing
	}
	want := Hash(s)
	c, err := is.Store.CredentialByHash(ctx, want)
	if errors.Is(err, store.ErrNotFound) {
		return store.Credential{}, ErrBad
	}
	if err != nil {
		return store.Credential{}, err
	}
	// The store matched by hash already; compare again in constant time
	// so that an implementation matching loosely cannot admit a secret.
	if subtle.ConstantTimeCompare([]byte(c.Hash), []byte(want)) != 1 || c.Revoked() {
		return store.Credential{}, ErrBad
	}
	if c.Kind != kind {
		return store.Credential{}, ErrWrongKind
	}
	return c, nil
}

// AuthenticateDevice checks a Runtime credential for deviceID: project API
// keys and the administration key are never Runtime credentials
// (daemon-protocol.txt:11).
func (is Issuer) AuthenticateDevice(ctx context.Context, s Secret, deviceID string) (store.Credential, error) {
	c, err := is.Authenticate(ctx, s, store.KindDevice)
	if err != nil {
		return c, err
	}
	if c.DeviceID != deviceID {
		return store.Credential{}, ErrWrongDevice
	}
	return c, nil
}

// Valid reports whether a credential authenticated earlier is still
// unrevoked: a live connection or stream asks again (revocation is
// immediate, docs/tenancy.md). ErrBad when it was revoked or removed.
func (is Issuer) Valid(ctx context.Context, c store.Credential) error {
	now, err := is.Store.CredentialByHash(ctx, c.Hash)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (now.ID != c.ID || now.Revoked())) {
		return ErrBad
	}
	return err
}

// Revoke revokes a credential by ID.
func (is Issuer) Revoke(ctx context.Context, id string) error {
	return is.Store.RevokeCredential(ctx, id, is.Now().UTC().Truncate(time.Millisecond))
}

// RevokeDevice revokes every unrevoked credential issued for deviceID.
func (is Issuer) RevokeDevice(ctx context.Context, deviceID string) ([]string, error) {
	list, err := is.Store.ListCredentials(ctx)
	if err != nil {
		return nil, fmt.Errorf("list credentials: %w", err)
	}
	revoked := []string{}
	for _, c := range list {
		if c.Kind != store.KindDevice || c.DeviceID != deviceID || c.Revoked() {
			continue
		}
		// A revocation that raced ours (ErrStale) is still a revocation.
		if err := is.Revoke(ctx, c.ID); err != nil && !errors.Is(err, store.ErrStale) {
			return revoked, fmt.Errorf("revoke credential %s: %w", c.ID, err)
		}
		revoked = append(revoked, c.ID)
	}
	return revoked, nil
}

// RefuseAll is the Authenticator of a Core given no way to authenticate:
// every secret is refused as unknown.
type RefuseAll struct{}

func (RefuseAll) Authenticate(context.Context, Secret, store.CredentialKind) (store.Credential, error) {
	return store.Credential{}, ErrBad
}

func (RefuseAll) AuthenticateDevice(context.Context, Secret, string) (store.Credential, error) {
	return store.Credential{}, ErrBad
}

func (RefuseAll) Valid(context.Context, store.Credential) error { return ErrBad }

func (RefuseAll) RevokeDevice(context.Context, string) ([]string, error) { return []string{}, nil }

// BearerToken extracts the secret of an "Authorization: Bearer" header
// value; "" when absent or of another scheme.
func BearerToken(header string) Secret {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return Secret(strings.TrimSpace(token))
}

// NewUUID returns a random canonical UUID (version 4), the form the wire
// requires of the identities Core mints for Environments
// (wire.IsCanonicalUUID).
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// NewID returns a random identifier with a prefix.
func NewID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}
