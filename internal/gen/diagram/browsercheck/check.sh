#!/usr/bin/env bash
# make diagrams-browser-check: render every docs/machines/*.mmd, the diagram
# of every page and the golden lease diagram with the real Mermaid library in
# headless Chromium, and check that each state shows its name (TestBrowserRender
# in internal/gen/diagram/browser_test.go). Not part of `make test`: it needs Chromium
# and the npm registry.
#
# Needs: Chromium (Debian: apt-get install -y chromium; or CHROMIUM=/path),
# node >= 18 and npm. Downloads no browser. The npm packages, at the versions
# pinned below, go to a cache outside the repository
# (DIAGRAM_CHECK_CACHE, default ~/.cache/agentwire/diagram-check).
set -euo pipefail

# Pinned. Which Mermaid GitHub runs is not published, so every diagram is
# rendered with the last release of each of the three lines it may be on.
# MERMAID_VERSIONS may be overridden to try others.
MERMAID_VERSIONS="${MERMAID_VERSIONS:-10.9.8 11.17.2 12.3.0}"
PUPPETEER_CORE_VERSION=24.43.1 # the last line supporting node 18-20

cd "$(dirname "$0")/../../.."

fail() {
	echo "diagrams-browser-check: $*" >&2
	exit 2
}

CHROMIUM="${CHROMIUM:-$(command -v chromium || true)}"
if [ -z "$CHROMIUM" ] || [ ! -x "$CHROMIUM" ]; then
	fail "no Chromium found.
This check renders the diagrams in a real browser and downloads none. Install
Debian's package (as root):
    apt-get install -y chromium      # the binary is /usr/bin/chromium
or set CHROMIUM to the path of a Chromium or Chrome binary, then run
make diagrams-browser-check again."
fi
command -v node >/dev/null || fail "node not found (node >= 18; Debian: apt-get install -y nodejs npm)"
command -v npm >/dev/null || fail "npm not found (Debian: apt-get install -y npm)"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" -ge 18 ] || fail "node $(node --version) is too old; puppeteer-core needs node >= 18"

cache="${DIAGRAM_CHECK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentwire/diagram-check}"

# install DIR CMD...: run CMD in a fresh DIR unless an earlier run finished.
install() {
	local dir="$1"
	shift
	[ -f "$dir/.complete" ] && return
	echo "diagrams-browser-check: installing into $dir" >&2
	rm -rf "$dir"
	mkdir -p "$dir"
	(cd "$dir" && "$@")
	touch "$dir/.complete"
}

puppeteer_core() {
	printf '{"private": true, "dependencies": {"puppeteer-core": "%s"}}\n' "$PUPPETEER_CORE_VERSION" >package.json
	# --ignore-scripts: no install step may fetch anything else.
	npm install --ignore-scripts --no-audit --no-fund --loglevel=error
}
install "$cache/puppeteer-core-$PUPPETEER_CORE_VERSION" puppeteer_core

# Mermaid's browser bundle is self-contained: take it from the package
# tarball instead of installing the ~190 dependencies of the package.
mermaid_bundle() {
	npm pack --silent "mermaid@$1" >/dev/null
	tar -xzf "mermaid-$1.tgz" --strip-components=1 package/package.json package/dist/mermaid.min.js
	rm "mermaid-$1.tgz"
}
bundles=""
for v in $MERMAID_VERSIONS; do
	install "$cache/mermaid-$v" mermaid_bundle "$v"
	bundles="$bundles $v=$cache/mermaid-$v/dist/mermaid.min.js"
done

export AGENTWIRE_BROWSER_CHECK=1 CHROMIUM
export DIAGRAM_CHECK_MODULES="$cache/puppeteer-core-$PUPPETEER_CORE_VERSION/node_modules"
export MERMAID_BUNDLES="${bundles# }"
echo "diagrams-browser-check: $("$CHROMIUM" --version 2>/dev/null | head -1); mermaid $MERMAID_VERSIONS; puppeteer-core $PUPPETEER_CORE_VERSION" >&2
exec go test -count=1 -run '^TestBrowserRender$' -v ./internal/gen/diagram
