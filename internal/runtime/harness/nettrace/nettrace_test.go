package nettrace

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Lines as strace 6 prints them (-f -qq, -e trace=connect,sendto,…).
func TestParseReadsEveryPeer(t *testing.T) {
	trace := `4101  connect(3, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110) = -1 ENOENT (No such file or directory)
4101  connect(9, {sa_family=AF_INET, sin_port=htons(47811), sin_addr=inet_addr("127.0.0.1")}, 16) = -1 EINPROGRESS (Operation now in progress)
4102  connect(5, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "2606:4700::6810:84e5", &sin6_addr), sin6_scope_id=0}, 28 <unfinished ...>
4102  <... connect resumed>) = -1 ENETUNREACH (Network is unreachable)
4103  connect(6, {sa_family=AF_UNSPEC, sa_data="\0\0\0\0\0\0\0\0\0\0\0\0\0\0"}, 16) = 0
4103  sendto(7, "\x12\x34\x01\x00\x00\x01", 29, MSG_NOSIGNAL, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.0.0.2")}, 16) = 29
4103  sendmmsg(8, [{msg_hdr={msg_name={sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.0.0.2")}, msg_namelen=16}}, {msg_hdr={msg_name={sa_family=AF_INET6, sin6_port=htons(53), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, msg_namelen=28}}], 2, MSG_NOSIGNAL) = 2
4104  sendto(9, "GET / HTTP/1.1\r\n", 16, MSG_NOSIGNAL, NULL, 0) = 16
`
	peers, unread := parse(trace)
	assert.Empty(t, unread)
	var got []string
	for _, p := range peers {
		got = append(got, fmt.Sprintf("%s %s %d", p.Family, p.Addr, p.Port))
	}
	assert.Equal(t, []string{
		"AF_INET 127.0.0.1 47811",
		"AF_INET6 2606:4700::6810:84e5 443",
		"AF_INET 10.0.0.2 53",
		"AF_INET 10.0.0.2 53",
		"AF_INET6 ::1 53",
	}, got)
}

// An address family the parser cannot read is reported, never passed over.
func TestParseReportsWhatItCannotRead(t *testing.T) {
	line := `4101  connect(3, {sa_family=AF_PACKET, sll_protocol=htons(ETH_P_ALL), sll_ifindex=2}, 20) = 0`
	peers, unread := parse(line + "\n")
	assert.Empty(t, peers)
	assert.Equal(t, []string{line}, unread)
}
