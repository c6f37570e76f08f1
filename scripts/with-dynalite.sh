#!/bin/sh
# Runs a command with a fresh dynalite (the local DynamoDB-compatible server) and
# AT_DYNAMODB_ENDPOINT pointing at it; stops dynalite afterwards, whatever happens.
#   scripts/with-dynalite.sh COMMAND [ARGS...]
set -eu
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
cleanup() { ./scripts/dynalite.sh stop "$dir"; rm -rf "$dir"; }
trap cleanup EXIT INT TERM
port=$(./scripts/dynalite.sh start "$dir" $$)
AT_DYNAMODB_ENDPOINT="http://127.0.0.1:$port" "$@"
