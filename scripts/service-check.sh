#!/bin/sh
# `make service-check`: does `make install` give a service that starts with systemd?
# Boots this machine's own systemd in a container (systemd-nspawn, Debian package
# systemd-container) over a throw-away overlay of / whose writes go to memory, installs
# actionstools there with `make install`, and checks actionstools.service for real:
# it starts, answers /health and a note with a token, runs as a dynamic user with no
# capabilities under a seccomp filter, keeps its database in /var/lib/actionstools across
# a restart, stops cleanly, and with no AUTH_JWT_SECRET fails once (exit status 2)
# without restarting. Prints one line per check. Exit status: 0 all passed, 1 a check
# failed, 2 a prerequisite is missing (root, systemd-nspawn), 3 this machine cannot boot
# a container (no mount namespace, overlayfs or nspawn): the last two say why.
#
# Needs root, systemd-nspawn, and a kernel that allows mount namespaces and overlayfs;
# for machines where systemd is PID 1 as well as for sandboxes where it is not. Nothing
# outside the overlay changes: every mount lives in a private mount namespace that ends
# with this script. tests/install/service.test.mjs runs it (about 5 s).
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)

if [ "${1:-}" != "--inside" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "service-check: needs root (it mounts and boots a container)" >&2
        exit 2
    fi
    if ! command -v systemd-nspawn >/dev/null 2>&1; then
        echo "service-check: needs systemd-nspawn: apt-get install systemd-container" \
            "(the version of the installed systemd package)" >&2
        exit 2
    fi
    if ! unshare --mount --propagation private true 2>/dev/null; then
        echo "service-check: cannot make a mount namespace here (unshare --mount)" >&2
        exit 3
    fi
    make -s --no-print-directory build
    exec unshare --mount --propagation private "$root/scripts/service-check.sh" --inside
fi

# --- inside a private mount namespace
work=$(mktemp -d /tmp/at-service-check.XXXXXX)
nspawn_pid=""
made_run_dir=""
cleanup() {
    [ -z "$nspawn_pid" ] || kill -TERM "$nspawn_pid" 2>/dev/null || true
    [ -z "$nspawn_pid" ] || wait "$nspawn_pid" 2>/dev/null || true
    umount -l "$work/root" "$work/mem" /run/systemd/nspawn 2>/dev/null || true
    rm -rf "$work"
    [ -z "$made_run_dir" ] || rmdir /run/systemd/nspawn 2>/dev/null || true
}
trap cleanup EXIT INT TERM
fail() {
    echo "service-check: FAILED: $*" >&2
    [ -z "${leader:-}" ] || nsenter -t "$leader" -a journalctl -u actionstools --no-pager -n 20 >&2 || true
    exit 1
}
ok() { echo "service-check: ok: $*"; }
unavailable() {
    echo "service-check: this machine cannot boot a container: $*" >&2
    exit 3
}

mkdir "$work/mem" "$work/root"
mount -t tmpfs -o size=1g,mode=0755 tmpfs "$work/mem" || unavailable "cannot mount a tmpfs"
mkdir "$work/mem/up" "$work/mem/work"
mount -t overlay overlay -o "lowerdir=/,upperdir=$work/mem/up,workdir=$work/mem/work" "$work/root" ||
    unavailable "cannot mount an overlay of /"
# nspawn keeps state in /run/systemd/nspawn: in this namespace, in memory.
[ -d /run/systemd/nspawn ] || made_run_dir=yes
mkdir -p /run/systemd/nspawn
mount -t tmpfs tmpfs /run/systemd/nspawn || unavailable "cannot mount a tmpfs on /run/systemd/nspawn"

r=$work/root
make -s --no-print-directory install DESTDIR="$r" >/dev/null
secret=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
sed -i "s/^AUTH_JWT_SECRET=.*/AUTH_JWT_SECRET=$secret/" "$r/etc/actionstools/actionstools.env"
systemctl --root="$r" --quiet enable actionstools.service
# A boot of just this service: none of the machine's own services, and no wait for a
# network the container does not have.
cat >"$r/etc/systemd/system/at-check.target" <<'UNIT'
[Unit]
Description=actionstools service check
Wants=actionstools.service
After=actionstools.service
UNIT
systemctl --root="$r" --quiet mask systemd-networkd-wait-online.service
rm -f "$r/etc/machine-id"

systemd-nspawn -D "$r" --register=no --keep-unit --link-journal=no --private-network \
    --console=pipe -b -- systemd.unit=at-check.target >"$work/mem/console.log" 2>&1 &
nspawn_pid=$!

leader=""
n=0
while [ $n -lt 300 ]; do # 30 s
    # The container's PID 1 is systemd, a child of nspawn. Match it by name: nspawn's
    # short-lived helper children come first, and a busy machine catches one of them.
    [ -n "$leader" ] && [ -d "/proc/$leader" ] || leader=$(pgrep -P "$nspawn_pid" -x "systemd|init" | head -1 || true)
    if [ -n "$leader" ] && [ "$(nsenter -t "$leader" -a systemctl is-active actionstools 2>/dev/null)" = active ]; then
        break
    fi
    kill -0 "$nspawn_pid" 2>/dev/null || unavailable "systemd-nspawn stopped: $(cat "$work/mem/console.log")"
    sleep 0.1
    n=$((n + 1))
done
in_container() { nsenter -t "$leader" -a "$@"; }
[ -n "$leader" ] || unavailable "no container after 30 s: $(cat "$work/mem/console.log")"
[ $n -lt 300 ] || fail "actionstools.service is not active after 30 s"
ok "systemd $(in_container systemctl --version | head -1 | cut -d' ' -f2) started actionstools.service"

health() { in_container curl -s --max-time 5 http://127.0.0.1:8080/health; }
wait_health() {
    i=0
    while [ $i -lt 50 ] && ! health >/dev/null; do sleep 0.1; i=$((i + 1)); done
}
wait_health
h=$(health) || fail "/health does not answer"
echo "$h" | grep -q '"status":"ok"' || fail "/health answered $h"
ok "/health: $h"

token=$(in_container /usr/local/bin/actionstools --config /etc/actionstools/actionstools.env token --instance check)
code=$(in_container curl -s -o /dev/null -w '%{http_code}' -X POST http://127.0.0.1:8080/targets/t-1/notes \
    -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -d '{"data": {"text": "kept"}}')
[ "$code" = 201 ] || fail "POST a note answered $code"
ok "a note created (201)"

pid=$(in_container systemctl show -P MainPID actionstools)
user=$(in_container ps -o user= -p "$pid")
status=$(in_container cat "/proc/$pid/status")
echo "$status" | grep -q '^CapEff:[[:space:]]*0000000000000000$' || fail "the service has capabilities"
echo "$status" | grep -q '^NoNewPrivs:[[:space:]]*1$' || fail "NoNewPrivs is not set"
echo "$status" | grep -q '^Seccomp:[[:space:]]*2$' || fail "no seccomp filter"
[ "$user" != root ] || fail "the service runs as root"
ok "runs as $user (dynamic), no capabilities, NoNewPrivileges, seccomp filter"
in_container test -f /var/lib/actionstools/actionstools.db || fail "no database in /var/lib/actionstools"
ok "database in /var/lib/actionstools"
exposure=$(in_container systemd-analyze security actionstools --no-pager | sed -n 's/.*Overall exposure level for actionstools.service: //p')
ok "systemd-analyze security: $exposure"

in_container systemctl restart actionstools
wait_health
in_container curl -s "http://127.0.0.1:8080/targets/t-1/notes" -H "Authorization: Bearer $token" |
    grep -q '"text":"kept"' || fail "the note is gone after a restart"
ok "the note is still there after a restart"

in_container systemctl stop actionstools
result=$(in_container systemctl show -P Result actionstools)
[ "$result" = success ] || fail "stop ended with result $result"
ok "stopped cleanly (SIGTERM, result $result)"

in_container sed -i 's/^AUTH_JWT_SECRET=.*/AUTH_JWT_SECRET=/' /etc/actionstools/actionstools.env
in_container systemctl start actionstools 2>/dev/null || true
sleep 3
state=$(in_container systemctl show -P ActiveState actionstools)
st=$(in_container systemctl show -P ExecMainStatus actionstools)
restarts=$(in_container systemctl show -P NRestarts actionstools)
if [ "$state" != failed ] || [ "$st" != 2 ] || [ "$restarts" != 0 ]; then
    fail "without a secret: state $state, status $st, $restarts restarts"
fi
in_container journalctl -u actionstools --no-pager -o cat | grep -q 'AUTH_JWT_SECRET is not set' ||
    fail "the journal does not say AUTH_JWT_SECRET is missing"
ok "without AUTH_JWT_SECRET: failed with status 2, the journal says why, 0 restarts"
echo "service-check: all passed"
