// Package transfer is the Runtime's side of runtime_prepare bodies: a
// staging area the daemon owns, where each transfer's chunks are written
// and hashed as they arrive, and the installers that a commit runs. A chunk
// receipt confirms bytes in the staging area only; nothing reaches the
// workspace or the capability directory before a commit has verified the
// size and digest (daemon-protocol.txt:104).
//
// The package does no protocol work: the execution Session decides which
// step is valid and what to answer, and calls these functions off the
// connection's receive loop.
package transfer

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"sync"
)

// Error is a definite refusal or failure of one transfer step: Outcome is a
// runtime_prepare_result outcome ("rejected" or "failed") and Code one of
// its finite codes. Anything else an installer returns is uncertain.
type Error struct {
	Outcome string
	Code    string
	Msg     string
}

func (e *Error) Error() string { return e.Code + ": " + e.Msg }

func rejected(code, format string, args ...any) *Error {
	return &Error{Outcome: "rejected", Code: code, Msg: fmt.Sprintf(format, args...)}
}

func failed(format string, args ...any) *Error {
	return &Error{Outcome: "failed", Code: "runtime_preparation_failed", Msg: fmt.Sprintf(format, args...)}
}

// Area is the daemon's own directory for transfers: staging/ holds one
// directory per transfer in progress, capabilities/ the installed skills
// and plugins. It lives in the --state directory, or in a temporary
// directory the Area creates and removes.
type Area struct {
	dir     string
	owned   bool // dir was created by NewArea and is removed by Close
	staging string
	caps    string
}

// NewArea prepares the area under dir ("" makes a temporary one). Staging
// left behind by an earlier process is removed: a transfer never outlives
// its connection, so nothing there can be resumed (daemon-protocol.txt:159).
func NewArea(dir string) (*Area, error) {
	a := &Area{dir: dir}
	if dir == "" {
		d, err := os.MkdirTemp("", "agentwire-runtime-")
		if err != nil {
			return nil, fmt.Errorf("transfer: %w", err)
		}
		a.dir, a.owned = d, true
	}
	a.staging = filepath.Join(a.dir, "staging")
	a.caps = filepath.Join(a.dir, "capabilities")
	if err := os.RemoveAll(a.staging); err != nil {
		return nil, fmt.Errorf("transfer: clearing old staging: %w", err)
	}
	for _, d := range []string{a.staging, filepath.Join(a.caps, "skills"), filepath.Join(a.caps, "plugins")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("transfer: %w", err)
		}
	}
	return a, nil
}

// Dir is the area's directory.
func (a *Area) Dir() string { return a.dir }

// Capabilities is the directory installed skills and plugins live in:
// skills/<name> and plugins/<slot>.
func (a *Area) Capabilities() string { return a.caps }

// Close removes the area when NewArea created it; a --state directory is
// kept (its staging is emptied on the next start).
func (a *Area) Close() error {
	if a.owned {
		return os.RemoveAll(a.dir)
	}
	return nil
}

// NewStaged returns the staging of one transfer. It touches no file: the
// directory is made by the first Write (or by Open for an empty body), so
// the connection's loop can call it.
func (a *Area) NewStaged() *Staged {
	var b [8]byte
	_, _ = rand.Read(b[:])
	s := &Staged{dir: filepath.Join(a.staging, hex.EncodeToString(b[:])), h: sha256.New()}
	s.settled = sync.NewCond(&s.mu)
	return s
}

// Staged is one transfer's body as received so far. Its methods may be
// called from different goroutines (a chunk's writer, the connection loop's
// discard); they are serialized by its lock.
//
// decision: the SHA-256 is computed behind the writes, in their order, by
// a goroutine that runs while chunks wait to be hashed: a chunk's receipt
// confirms staged bytes (daemon-protocol.txt:104), so it need not wait for
// the hash, which Verify does before any installer runs. A 64 KiB chunk's
// hash costs about as much as its write, so the next chunk's round trip
// overlaps it instead of following it.
type Staged struct {
	mu   sync.Mutex
	dir  string
	f    *os.File
	n    int64
	h    hash.Hash // touched by the hashing goroutine while hashing is set
	gone bool

	pending []stagedChunk // written, not hashed yet, in order
	hashing bool          // a goroutine hashes pending
	settled *sync.Cond    // hashing became false
}

// stagedChunk is a written chunk waiting for the hash, and what to call
// with its bytes once they are hashed (or dropped by Discard).
type stagedChunk struct {
	data []byte
	done func([]byte)
}

var errDiscarded = errors.New("the staged transfer was discarded")

func (s *Staged) open() error {
	if s.gone {
		return errDiscarded
	}
	if s.f != nil {
		return nil
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, "body"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	s.f = f
	return nil
}

// Write stages data at offset, which must equal the bytes staged so far;
// the body may not grow past limit. A refused chunk leaves the staging as
// it was. data is hashed after Write returned: the caller must not change
// it (Stage says when it may).
func (s *Staged) Write(offset int64, data []byte, limit int64) error {
	return s.Stage(offset, data, limit, nil)
}

// Stage is Write, and calls done (when set) with data once the hash has
// read it, or once Discard dropped it; it is called exactly once for a
// chunk Stage accepted, and never for a refused one (nil error: accepted).
func (s *Staged) Stage(offset int64, data []byte, limit int64, done func([]byte)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case offset != s.n:
		return rejected("invalid_request", "chunk at offset %d, but %d bytes are staged", offset, s.n)
	case s.n+int64(len(data)) > limit:
		return rejected("invalid_request", "chunk ends at %d, past the declared size %d", s.n+int64(len(data)), limit)
	}
	if err := s.open(); err != nil {
		return err
	}
	if _, err := s.f.WriteAt(data, s.n); err != nil {
		return err
	}
	s.n += int64(len(data))
	s.pending = append(s.pending, stagedChunk{data: data, done: done})
	if !s.hashing {
		s.hashing = true
		go s.hash()
	}
	return nil
}

// hash feeds the pending chunks to the SHA-256 in order and ends when none
// is left; a discarded staging's chunks are dropped unhashed.
func (s *Staged) hash() {
	s.mu.Lock()
	for len(s.pending) > 0 {
		q, gone := s.pending, s.gone
		s.pending = nil
		s.mu.Unlock()
		for _, c := range q {
			if !gone {
				s.h.Write(c.data)
			}
			if c.done != nil {
				c.done(c.data)
			}
		}
		s.mu.Lock()
	}
	s.hashing = false
	s.settled.Broadcast()
	s.mu.Unlock()
}

// waitHashed waits, with s.mu held, until every staged chunk was hashed.
func (s *Staged) waitHashed() {
	for s.hashing {
		s.settled.Wait()
	}
}

// Size is the number of bytes staged.
func (s *Staged) Size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Verify checks that exactly size bytes were staged and that they hash to
// digest (lower-case hex SHA-256); a mismatch is rejected invalid_request,
// as the commit of an incomplete or corrupted body.
func (s *Staged) Verify(size int64, digest string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return errDiscarded
	}
	s.waitHashed()
	if s.n != size {
		return rejected("invalid_request", "%d bytes staged, %d declared", s.n, size)
	}
	if got := hex.EncodeToString(s.h.Sum(nil)); got != digest {
		return rejected("invalid_request", "the staged bytes do not match the declared sha256")
	}
	return nil
}

// body opens the staged bytes for reading from the start.
func (s *Staged) body() (*os.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.open(); err != nil {
		return nil, err
	}
	return os.Open(s.f.Name())
}

// scratch returns a fresh directory inside this transfer's staging, for an
// archive's extraction.
func (s *Staged) scratch(name string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return "", errDiscarded
	}
	d := filepath.Join(s.dir, name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", err
	}
	return d, nil
}

// Discard removes the staging; later writes fail. It is idempotent.
func (s *Staged) Discard() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone = true
	// The hashing goroutine drops what is left and ends: nothing of a
	// discarded transfer outlives its Discard.
	s.waitHashed()
	if s.f != nil {
		_ = s.f.Close()
		s.f = nil
	}
	return os.RemoveAll(s.dir)
}
