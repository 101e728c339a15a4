#!/usr/bin/env bash
# start.sh DIR: starts a throwaway PostgreSQL for the tests of
# core/store/postgres and prints its DSN on stdout (nothing else goes to
# stdout). DIR must not exist or be empty; the server keeps everything
# there (data, socket, log) and stop.sh DIR stops it and removes DIR.
#
# The server listens on 127.0.0.1 only, on a free port, with trust
# authentication for the superuser agentwire: it is for tests, never for
# data anyone keeps. For the same reason durability is off (fsync,
# full-page writes): the suite creates a database per test, and a crash of
# a throwaway server loses nothing that matters. PGTEST_DURABLE=1 keeps
# PostgreSQL's durable defaults, for benchmarks compared with the
# synchronous SQLite store (make bench-replicas).
#
# initdb and postgres refuse to run as root. As root the server runs as
# the unprivileged user PGTEST_USER (default nobody), which must be able to
# reach DIR: DIR's parent directories must be searchable by it (mktemp -d
# under /tmp is).
set -euo pipefail

die() {
	echo "pgtest: $*" >&2
	exit 1
}

[ $# -eq 1 ] || die "usage: $0 DIR"
dir="$1"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
[ -z "$(ls -A "$dir")" ] || die "$dir is not empty"

# The binaries: on PATH, else Debian's layout (/usr/lib/postgresql/N/bin),
# the newest version first.
bindir=""
if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
	bindir="$(dirname "$(command -v initdb)")"
else
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -rn); do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
			bindir="$d"
			break
		fi
	done
fi
[ -n "$bindir" ] || die "no PostgreSQL binaries (initdb, pg_ctl) on PATH or under /usr/lib/postgresql/*/bin; on Debian: apt-get install postgresql"

# as runs a command as the server's user: ourselves, or PGTEST_USER when
# we are root.
user="$(id -un)"
as() { "$@"; }
if [ "$(id -u)" -eq 0 ]; then
	user="${PGTEST_USER:-nobody}"
	id "$user" >/dev/null 2>&1 || die "running as root, and the user $user to run PostgreSQL as does not exist (set PGTEST_USER)"
	command -v setpriv >/dev/null || die "running as root without setpriv to drop to $user (initdb refuses root)"
	uid="$(id -u "$user")"
	gid="$(id -g "$user")"
	# setpriv, not su or runuser: it needs no login shell (nobody has
	# none) and no PAM session.
	as() { setpriv --reuid="$uid" --regid="$gid" --clear-groups env HOME="$dir" "$@"; }
	chown "$uid:$gid" "$dir"
	as test -w "$dir" || die "$user cannot write $dir: its parent directories must be searchable by $user"
fi
chmod 0700 "$dir"
echo "$user" >"$dir/.user" 2>/dev/null || as sh -c "echo '$user' >'$dir/.user'"
echo "$bindir" | as tee "$dir/.bindir" >/dev/null

as "$bindir/initdb" -D "$dir/data" -U agentwire --auth=trust --no-sync -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 ||
	{ cat "$dir/initdb.log" >&2; die "initdb failed"; }

# A free port: postgres itself is the judge (another process may take a
# port between a check and the bind), so a failed start on a taken port
# tries another one, a bounded number of times.
for attempt in 1 2 3 4 5 6 7 8; do
	port=$((20000 + RANDOM % 30000))
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		continue # something listens there
	fi
	durability="-c fsync=off -c full_page_writes=off -c synchronous_commit=off"
	[ "${PGTEST_DURABLE:-}" = 1 ] && durability=""
	if as "$bindir/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
		-o "-k $dir -c listen_addresses=127.0.0.1 -p $port $durability -c max_connections=200" \
		start >/dev/null; then
		echo "$port" | as tee "$dir/.port" >/dev/null
		echo "postgres://agentwire@127.0.0.1:$port/postgres?sslmode=disable"
		exit 0
	fi
	if ! grep -q "already in use\|could not bind" "$dir/postgres.log" 2>/dev/null; then
		break
	fi
done
cat "$dir/postgres.log" >&2 2>/dev/null || true
die "PostgreSQL did not start (log above)"
