#!/usr/bin/env bash
# stop.sh DIR: stops the PostgreSQL start.sh DIR started and removes DIR.
# Safe to call when the start failed half-way, or twice.
set -uo pipefail

[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 1; }
dir="$1"
[ -d "$dir" ] || exit 0
if [ -f "$dir/data/postmaster.pid" ] && [ -f "$dir/.bindir" ]; then
	bindir="$(cat "$dir/.bindir")"
	if [ "$(id -u)" -eq 0 ]; then
		user="$(cat "$dir/.user")"
		setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" --clear-groups \
			"$bindir/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null
	else
		"$bindir/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null
	fi || echo "pgtest: pg_ctl stop failed; see $dir/postgres.log" >&2
fi
rm -rf "$dir"
