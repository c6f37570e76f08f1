#!/bin/sh
# Installs what building and testing actionstools needs, when it is missing:
# Debian packages through apt-get (with sudo when not root) and the npm test tools
# from package-lock.json. Safe to run again: it does nothing when all is there.
set -eu
cd "$(dirname "$0")/.."

PACKAGES="build-essential pkg-config libmicrohttpd-dev libjansson-dev libsqlite3-dev \
libcurl4-openssl-dev libssl-dev uuid-dev libcmocka-dev wrk curl ca-certificates"

missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "deps: installing Debian packages:$missing"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi

if ! command -v node >/dev/null 2>&1; then
    echo "deps: Node.js >= 20 is needed for the black-box tests and dynalite; install it (for example from nodejs.org or NodeSource) and run again." >&2
    exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
    echo "deps: Node.js $(node --version) is too old: the black-box tests and dynalite need Node.js >= 20." >&2
    exit 1
fi

if [ -f package-lock.json ]; then
    if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
        echo "deps: npm ci"
        npm ci --no-audit --no-fund --loglevel=error
    fi
fi
