#!/bin/sh
# Installs the Debian packages named as arguments that are not installed yet, with
# apt-get (through sudo when not root), and says which in one line. Does nothing when
# all are there. Used by scripts/deps.sh and scripts/node.sh.
#   scripts/apt-install.sh PACKAGE...
set -eu

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "deps: not a Debian system (no dpkg-query); make sure these are installed: $*" >&2
    exit 0
fi

missing=""
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -n "$missing" ] || exit 0

echo "deps: installing Debian packages:$missing"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "deps: not root and no sudo: as root, run: apt-get install$missing" >&2
        exit 1
    fi
    SUDO="sudo"
fi
$SUDO apt-get update -qq
# --no-remove: installing never takes anything away (a Node.js from elsewhere, say).
# shellcheck disable=SC2086 # one word per package
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends --no-remove $missing
