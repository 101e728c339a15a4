// Package nettrace proves that a real CLI under test talked to nobody but
// the scripted endpoint on loopback: the CLI runs under strace, and every
// address it connected or sent a datagram to is read back from the trace.
//
// The real-harness tests run offline (issue 17 §4). A CLI that only tried
// to reach another host, and failed because the machine has no internet,
// would still pass every other test; the trace is what shows it did not
// try. strace is used rather than a network namespace because it needs no
// privileges beyond ptrace of a child, and it also catches a lookup that
// failed silently.
package nettrace

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
)

// Syscalls are the system calls traced: the ones that name a peer address.
// A UDP DNS query may go out with sendto or sendmmsg on an unconnected
// socket (musl's resolver does), so connect alone would miss it.
const Syscalls = "connect,sendto,sendmsg,sendmmsg"

// RequireStrace returns the strace binary. Without it the test is skipped,
// or fails under AGENTWIRE_REQUIRE_HARNESSES=1: `make check-harnesses`
// exists to prove the CLIs run offline, and a proof that silently did not
// run proves nothing.
func RequireStrace(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("strace")
	if err == nil {
		return p
	}
	if install.Required() {
		t.Fatalf("strace is not installed, and %s=1 needs the loopback-only proof (apt-get install strace)", install.EnvRequire)
		return ""
	}
	t.Skip("strace is not installed: the loopback-only check needs it (apt-get install strace)")
	return ""
}

// Trace is a CLI wrapped to run under strace.
type Trace struct {
	// Binary is the wrapper to start instead of the CLI: a shell script
	// that execs strace on the CLI with the same arguments.
	Binary string
	// Path is the trace file. Every process started through Binary
	// appends to it, with each line prefixed by its pid.
	Path string
}

// Wrap returns a wrapper for binary that traces Syscalls of it and all of
// its children into a file in a test-owned directory.
func Wrap(t testing.TB, binary string) *Trace {
	t.Helper()
	strace := RequireStrace(t)
	dir := t.TempDir()
	tr := &Trace{Binary: filepath.Join(dir, filepath.Base(binary)), Path: filepath.Join(dir, "net.trace")}
	// -A appends, so a version check run through the same wrapper does not
	// erase what an earlier process did; -qq drops strace's own notices.
	script := fmt.Sprintf("#!/bin/sh\nexec %s -f -A -qq -e trace=%s -o %s %s \"$@\"\n",
		shellQuote(strace), Syscalls, shellQuote(tr.Path), shellQuote(binary))
	require.NoError(t, os.WriteFile(tr.Binary, []byte(script), 0o755))
	return tr
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Peer is one address a traced call named.
type Peer struct {
	Family string // AF_INET or AF_INET6
	Addr   string
	Port   int
	Line   string // the trace line
}

var (
	family = regexp.MustCompile(`sa_family=(AF_[A-Z0-9]+)`)
	inet   = regexp.MustCompile(`sa_family=(AF_INET6?), sin6?_port=htons\((\d+)\), .*?(?:inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)")`)
)

// local families name no network peer.
var local = map[string]bool{"AF_UNIX": true, "AF_NETLINK": true, "AF_UNSPEC": true}

// Peers reads the network peers from the trace. A line naming an address
// of a family it cannot read fails the test: an unknown way out is not
// assumed harmless.
func (tr *Trace) Peers(t testing.TB) []Peer {
	t.Helper()
	b, err := os.ReadFile(tr.Path)
	require.NoError(t, err, "the trace was written")
	peers, unread := parse(string(b))
	assert.Empty(t, unread, "traced calls to addresses of an unexpected kind")
	return peers
}

// parse returns the inet peers of a trace, and the lines that name a
// non-local address it could not read.
func parse(trace string) (peers []Peer, unread []string) {
	for _, line := range strings.Split(trace, "\n") {
		named := 0
		for _, f := range family.FindAllStringSubmatch(line, -1) {
			if !local[f[1]] {
				named++
			}
		}
		if named == 0 {
			continue
		}
		ms := inet.FindAllStringSubmatch(line, -1)
		if len(ms) != named {
			unread = append(unread, line)
		}
		for _, m := range ms {
			port, _ := strconv.Atoi(m[2])
			peers = append(peers, Peer{Family: m[1], Addr: m[3] + m[4], Port: port, Line: line})
		}
	}
	return peers, unread
}

// loopback are the addresses of the scripted endpoint's host.
var loopback = map[string]bool{"127.0.0.1": true, "::1": true, "::ffff:127.0.0.1": true}

// RequireOnly checks that every network peer in the trace is the endpoint
// at endpointURL (an http://127.0.0.1:PORT URL), and that the endpoint was
// reached at least once (a trace that recorded nothing proves nothing). A
// loopback peer on another port fails too: something local the CLI was not
// configured to use.
func (tr *Trace) RequireOnly(t testing.TB, endpointURL string) {
	t.Helper()
	u, err := url.Parse(endpointURL)
	require.NoError(t, err)
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err, "the endpoint URL %q has a port", endpointURL)
	peers := tr.Peers(t)
	reached := 0
	for _, p := range peers {
		if assert.Truef(t, loopback[p.Addr], "contacted a host other than loopback: %s", p.Line) &&
			assert.Equalf(t, port, p.Port, "loopback, but not the scripted endpoint: %s", p.Line) {
			reached++
		}
	}
	assert.Positive(t, reached, "the trace shows the endpoint reached (%d peers traced)", len(peers))
}
