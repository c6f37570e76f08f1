#!/bin/sh
# `make run`: starts actionstools serve on the embedded store under ./var/ with a
# development token secret kept in ./var/dev.env (made once, never committed), and
# prints ready-to-paste curl lines with a token for an admin user of tenant "dev".
# Needs only the binary and openssl: no Node.js.
# Environment: LISTEN (default 127.0.0.1:8080), VAR_DIR (default ./var: the secret and
# the database), SQLITE_PATH (default $VAR_DIR/actionstools.db), BIN.
set -eu
cd "$(dirname "$0")/.."
BIN=${BIN:-build/release/actionstools}
VAR_DIR=${VAR_DIR:-./var}
mkdir -p "$VAR_DIR"
if [ ! -f "$VAR_DIR/dev.env" ]; then
    (umask 077 && printf 'AUTH_JWT_SECRET=%s\n' "$(openssl rand -hex 32)" >"$VAR_DIR/dev.env")
fi
export SQLITE_PATH="${SQLITE_PATH:-$VAR_DIR/actionstools.db}"
export LISTEN="${LISTEN:-127.0.0.1:8080}"
TOKEN=$("$BIN" --config "$VAR_DIR/dev.env" token --user 00000000-0000-4000-8000-000000000001 \
        --name "Dev User" --instance dev --admin --ttl 604800)
URL="http://${LISTEN}${BASE_PREFIX:-}"
cat <<MSG

actionstools is starting on $URL (store: $SQLITE_PATH). Try, in another terminal:

  TOKEN=$TOKEN

  curl -s -X POST $URL/targets/account-42/notes -H "Authorization: Bearer \$TOKEN" \\
       -H 'Content-Type: application/json' -d '{"data": {"text": "Call back on Monday"}}'
  curl -s $URL/targets/account-42/notes -H "Authorization: Bearer \$TOKEN"

Stop with Ctrl-C. The token is valid for 7 days; \`make run\` prints a fresh one.

MSG
exec "$BIN" --config "$VAR_DIR/dev.env" serve
