#!/bin/sh
# Installs what `make bench` needs beyond building and testing, when it is missing:
# wrk (load), curl (seeding), and the Flask + gunicorn twin's stack from Debian
# (python3-flask, gunicorn, python3-jwt; pip cannot be used here). Safe to run again:
# it does nothing when all is there. apt-get runs through sudo when not root.
set -eu

PACKAGES="wrk curl python3 python3-flask gunicorn python3-jwt"

missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "bench deps: installing Debian packages:$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
