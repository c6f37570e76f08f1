#!/bin/sh
# Makes sure the test tools (dynalite, the black-box tests) have Node.js 20 or newer.
# When the `node` on PATH is missing or older, it puts Node.js 20 in $TOOLS_DIR/node
# (default .tools/node, ignored by git), from the npm registry's node-linux-<arch>@20
# package fetched with npm (Debian's npm package when there is no npm), and says so in
# one line. The Makefile puts $TOOLS_DIR/node/bin first on PATH in every recipe, so the
# tests use it. Nothing is installed system-wide but Debian packages.
#   scripts/node.sh
# Environment: TOOLS_DIR (default: .tools in the repository). What npm fetched stays in
# $TOOLS_DIR/cache/npm, so doing it again needs no network.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
TOOLS_DIR=${TOOLS_DIR:-$root/.tools}
WANT=20
PATH="$TOOLS_DIR/node/bin:$PATH"
export PATH

# Prints the major version in a `node --version` answer (v18.19.0 -> 18), or nothing.
major() {
    m=${1#v}
    m=${m%%.*}
    case $m in
    '' | *[!0-9]*) ;;
    *) echo "$m" ;;
    esac
}

current=""
if command -v node >/dev/null 2>&1; then
    current=$(node --version 2>/dev/null || true)
fi
have=$(major "$current")
if [ -n "$have" ] && [ "$have" -ge $WANT ]; then
    exit 0
fi

case $(uname -m) in
x86_64 | amd64) arch=x64 ;;
aarch64 | arm64) arch=arm64 ;;
*)
    echo "deps: the tests need Node.js >= $WANT and the npm registry has no node-linux package for $(uname -m): install Node.js $WANT yourself" >&2
    exit 1
    ;;
esac
pkg="node-linux-$arch@$WANT"

# Debian's npm (with its nodejs, 18 on bookworm) is enough to fetch a package.
if ! command -v npm >/dev/null 2>&1; then
    ./scripts/apt-install.sh npm
    hash -r 2>/dev/null || true
fi

mkdir -p "$TOOLS_DIR/cache"
tmp=$(mktemp -d "$TOOLS_DIR/node.new.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
# npm finds its registry itself; --prefer-offline takes a package fetched before from
# the cache without asking the network again.
if ! (cd "$tmp" && npm pack "$pkg" --cache "$TOOLS_DIR/cache/npm" --prefer-offline \
    --no-update-notifier --loglevel=error >/dev/null); then
    echo "deps: could not fetch $pkg with npm; install Node.js >= $WANT yourself, or run again" >&2
    exit 1
fi
mkdir "$tmp/node"
# The package is Node.js's own build: bin/node, man page, headers (left out).
tar -xzf "$tmp"/node-linux-*.tgz -C "$tmp/node" --strip-components=1 --exclude=package/include
rm -f "$tmp"/node-linux-*.tgz
version=$("$tmp/node/bin/node" --version 2>/dev/null || true)
if [ "$(major "$version")" != "$WANT" ]; then
    echo "deps: $pkg holds a node that answers '${version:-nothing}', not v$WANT; nothing installed" >&2
    exit 1
fi
rm -rf "$TOOLS_DIR/node"
mv "$tmp/node" "$TOOLS_DIR/node"
where=${TOOLS_DIR#"$root"/}
echo "deps: the tests need Node.js >= $WANT and PATH has ${current:-none}: put Node.js $version (npm package $pkg) in $where/node, which make test uses"
