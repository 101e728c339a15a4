package server

import (
	"errors"
	"net"
	"strconv"
	"sync"
	"time"
)

// Default connection caps of `core serve` (docs/limits.md).
const (
	DefaultMaxConnections          = 10000
	DefaultMaxConnectionsPerClient = 1000
)

// LimitListener caps the connections a listener holds open at once, in
// all and per client IP address. Every accepted connection counts until it
// is closed, whatever it carries: API requests, event streams and the
// Runtimes' WebSockets (a hijacked connection is still the wrapped one).
//
// decision: a connection over a cap is answered with a fixed, minimal
// 503 with Retry-After and closed at once, from the accept loop. The
// answer is under 200 bytes, so it fits the socket's send buffer and the
// write does not wait on the client (a short write deadline bounds it
// anyway); nothing of the request is read, so no goroutine, buffer or
// timer is spent on a connection that is refused. A client that already
// sent its request may see a reset instead of the 503; a plain close
// would tell it even less, and Retry-After is what the issue asks of a
// refusal. Core serves plain HTTP (TLS terminates in front of it), so a
// plaintext answer is one the client can read.
//
// decision: loopback clients count like any other: a local process that
// opens a thousand connections is as much a fault as a remote one, and
// the demo and the tests stay far below the default. Behind a reverse
// proxy every client shares the proxy's address, so such a deployment
// sets --max-connections-per-client 0 (no per-client cap) and caps
// clients at the proxy.
type LimitListener struct {
	net.Listener
	// Max is the cap over every client; PerClient the cap per client IP
	// address. 0 means no cap.
	Max, PerClient int
	// RetryAfter is the Retry-After of the refusal, in seconds (1 when 0).
	RetryAfter int

	mu       sync.Mutex
	total    int
	byClient map[string]int
	refused  uint64
}

// errOverCap marks a connection over a cap.
var errOverCap = errors.New("server: connection over the cap")

// Accept returns the next connection within the caps; connections over a
// cap are answered and closed here and never returned.
func (l *LimitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := clientIP(c.RemoteAddr())
		if err := l.take(ip); err != nil {
			l.refuse(c)
			continue
		}
		return &limitedConn{Conn: c, l: l, ip: ip}, nil
	}
}

// Open reports how many connections are held now, in all and for ip.
func (l *LimitListener) Open(ip string) (total, client int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.byClient[ip]
}

// Refused reports how many connections were refused so far.
func (l *LimitListener) Refused() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

func (l *LimitListener) take(ip string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if (l.Max > 0 && l.total >= l.Max) || (l.PerClient > 0 && l.byClient[ip] >= l.PerClient) {
		l.refused++
		return errOverCap
	}
	if l.byClient == nil {
		l.byClient = map[string]int{}
	}
	l.total++
	l.byClient[ip]++
	return nil
}

func (l *LimitListener) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.byClient[ip]--; l.byClient[ip] <= 0 {
		delete(l.byClient, ip)
	}
}

// refuseWrite bounds the refusal's write: the answer fits the send buffer,
// so this only matters for a peer whose window is already closed.
const refuseWrite = 100 * time.Millisecond

func (l *LimitListener) refuse(c net.Conn) {
	after := l.RetryAfter
	if after <= 0 {
		after = 1
	}
	body := `{"error":"too_many_connections","detail":"Core holds as many connections as it allows; retry later"}` + "\n"
	resp := "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: " + strconv.Itoa(after) +
		"\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	_ = c.SetWriteDeadline(time.Now().Add(refuseWrite))
	_, _ = c.Write([]byte(resp))
	_ = c.Close()
}

// clientIP is the address a connection is counted under: its IP without
// the port (a client's connections come from many ports).
func clientIP(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// limitedConn gives its slot back once, on its first Close.
type limitedConn struct {
	net.Conn
	l    *LimitListener
	ip   string
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.ip) })
	return err
}
