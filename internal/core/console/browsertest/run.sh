#!/usr/bin/env bash
# make test-console: the web console in real headless Chromium against a
# real Core and a real Runtime (TestConsoleInBrowser in
# cmd/agentwire/console_browser_test.go), with axe-core checking every page.
# Not part of `make test`: it needs Chromium and the npm registry.
#
# Needs: Chromium (Debian: apt-get install -y chromium; or CHROMIUM=/path)
# and npm. Downloads no browser. axe-core, at the version pinned below, goes
# to a cache outside the repository (CONSOLE_CHECK_CACHE, default
# ~/.cache/agentwire/console-check). Screenshots go to
# $AGENTWIRE_ARTIFACTS/console (a new temporary folder when unset; the test
# prints it).
set -euo pipefail

AXE_CORE_VERSION=4.14.1 # pinned

cd "$(dirname "$0")/../../../.."

fail() {
	echo "test-console: $*" >&2
	exit 2
}

CHROMIUM="${CHROMIUM:-$(command -v chromium || true)}"
if [ -z "$CHROMIUM" ] || [ ! -x "$CHROMIUM" ]; then
	fail "no Chromium found.
This test drives the console in a real browser and downloads none. Install
Debian's package (as root):
    apt-get install -y chromium      # the binary is /usr/bin/chromium
or set CHROMIUM to the path of a Chromium or Chrome binary, then run
make test-console again."
fi
command -v npm >/dev/null || fail "npm not found (Debian: apt-get install -y npm)"

cache="${CONSOLE_CHECK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentwire/console-check}"
dir="$cache/axe-core-$AXE_CORE_VERSION"
if [ ! -f "$dir/.complete" ]; then
	echo "test-console: installing axe-core $AXE_CORE_VERSION into $dir" >&2
	rm -rf "$dir"
	mkdir -p "$dir"
	# axe.min.js is self-contained: take it from the package tarball, which
	# runs no install script.
	(cd "$dir" && npm pack --silent "axe-core@$AXE_CORE_VERSION" >/dev/null &&
		tar -xzf "axe-core-$AXE_CORE_VERSION.tgz" --strip-components=1 package/package.json package/axe.min.js &&
		rm "axe-core-$AXE_CORE_VERSION.tgz")
	touch "$dir/.complete"
fi

export AGENTWIRE_CONSOLE_BROWSER=1 CHROMIUM AXE_JS="$dir/axe.min.js"
echo "test-console: $("$CHROMIUM" --version 2>/dev/null | head -1); axe-core $AXE_CORE_VERSION" >&2
exec go test -race -count=1 -timeout 8m -run '^TestConsoleInBrowser$' -v ./cmd/agentwire
