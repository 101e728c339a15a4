// Package vault seals a project's secrets (the bearer credentials an
// Agent's MCP servers use) before they reach the store, and opens them
// only when a Run needs one. A sealed value is bound to its project and
// name: a row copied under another name or project does not open.
package vault

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

// NameRule is the syntax of a secret's name.
var NameRule = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// NameSyntax says NameRule in words.
const NameSyntax = "1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"

// KeySize is the length of a Sealer's key (AES-256).
const KeySize = 32

// Sealer seals and opens secret values with one key.
type Sealer struct{ aead cipher.AEAD }

// New returns a Sealer for key (KeySize bytes).
func New(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("vault: a key is %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// Ephemeral returns a Sealer with a random key that lives as long as the
// process: for a Core whose store lives in memory too.
func Ephemeral() *Sealer {
	key := make([]byte, KeySize)
	_, _ = rand.Read(key)
	s, _ := New(key)
	return s
}

// KeyFile is the key's file name in Core's data directory.
const KeyFile = "vault.key"

// LoadKey reads the key at path, creating it (KeySize random bytes, mode
// 0600) when there is none.
//
// decision: the key lives beside the database, not in it, so a copy or
// backup of the database alone reveals no secret; an operator who keeps
// backups of the whole directory should keep the key out of them.
func LoadKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key = make([]byte, KeySize)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("vault: making a key: %w", err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("vault: %w", err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("vault: writing the key: %w", err)
		}
		_, werr := f.Write(key)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return nil, fmt.Errorf("vault: writing the key: %w", werr)
		}
		return key, nil
	}
	if err != nil {
		return nil, fmt.Errorf("vault: reading the key: %w", err)
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("vault: the key %s is %d bytes, want %d", path, len(key), KeySize)
	}
	return key, nil
}

func binding(project, name string) []byte { return []byte(project + "\x00" + name) }

// Seal encrypts value for the secret name of project.
func (s *Sealer) Seal(project, name string, value []byte) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	return s.aead.Seal(nonce, nonce, value, binding(project, name)), nil
}

// ErrOpen is a sealed value that does not open: another key, another
// project or name, or a damaged row.
var ErrOpen = errors.New("vault: the sealed value does not open with this key, project and name")

// Open decrypts what Seal returned for the same project and name.
func (s *Sealer) Open(project, name string, sealed []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, ErrOpen
	}
	out, err := s.aead.Open(nil, sealed[:n], sealed[n:], binding(project, name))
	if err != nil {
		return nil, ErrOpen
	}
	return out, nil
}
