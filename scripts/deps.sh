#!/bin/sh
# Installs what actionstools needs, when it is missing. Safe to run again: it does
# nothing when all is there.
#   scripts/deps.sh build   what building and serving need: Debian packages only
#                           (`make run`, `make build-deps`); no Node.js, no npm
#   scripts/deps.sh         that, the Debian packages the tests and `make bench` use,
#                           Node.js >= 20 (scripts/node.sh) and the npm test tools from
#                           package-lock.json (`make deps`, `make test`)
# Debian packages come through apt-get (with sudo when not root): scripts/apt-install.sh.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)

# To build and serve: the compiler, pkg-config, the libraries, and openssl (make run
# makes a development secret with it).
BUILD_PACKAGES="build-essential pkg-config libmicrohttpd-dev libjansson-dev libsqlite3-dev \
libcurl4-openssl-dev libssl-dev uuid-dev openssl"
# To test and measure: the unit test framework, curl (dynalite.sh waits with it), wrk
# (make bench), systemd-analyze (checks the unit file; in the systemd package), chromium
# (renders /docs headless in tests/api/docs.test.mjs).
TEST_PACKAGES="libcmocka-dev curl ca-certificates wrk systemd chromium"

mode=${1:-all}
case $mode in
build)
    # shellcheck disable=SC2086 # one word per package
    ./scripts/apt-install.sh $BUILD_PACKAGES
    exit 0
    ;;
all) ;;
*)
    echo "usage: $0 [build]" >&2
    exit 2
    ;;
esac

# shellcheck disable=SC2086 # one word per package
./scripts/apt-install.sh $BUILD_PACKAGES $TEST_PACKAGES
# systemd-nspawn boots the installed service in a container (scripts/service-check.sh):
# systemd-container at exactly the installed systemd's version, never an upgrade of
# systemd for a test; when Debian no longer has that version, the check is skipped.
if ! dpkg-query -W -f='${Status}' systemd-container 2>/dev/null | grep -q "install ok installed" &&
    v=$(dpkg-query -W -f='${Version}' systemd 2>/dev/null) && [ -n "$v" ] &&
    apt-cache show "systemd-container=$v" >/dev/null 2>&1; then
    ./scripts/apt-install.sh "systemd-container=$v" ||
        echo "deps: could not install systemd-container $v: the service check will be skipped"
fi
./scripts/node.sh
TOOLS_DIR=${TOOLS_DIR:-$root/.tools}
PATH="$TOOLS_DIR/node/bin:$PATH"
export PATH

# The npm test tools: npm ci when node_modules does not hold exactly what
# package-lock.json names (compared by content: a fresh checkout's newer lockfile is
# not a reason to reinstall).
[ -f package-lock.json ] || exit 0
if why=$(node scripts/lock-current.mjs); then
    exit 0
fi
if [ -L node_modules ]; then
    echo "deps: node_modules is a link to $(readlink node_modules) and does not match package-lock.json ($why): run 'npm ci' there" >&2
    exit 1
fi
echo "deps: npm ci ($why)"
npm ci --no-audit --no-fund --no-update-notifier --loglevel=error
