#!/usr/bin/env bash
# A throwaway PostgreSQL server on 127.0.0.1 for the saver tests.
#
#   eval "$(scripts/postgres.sh start)"   # prints: export PAUSEPOINT_PG_URL=postgresql://...
#   scripts/postgres.sh stop              # stops the server and removes its data directory
#
# Installs Debian's `postgresql` package when initdb/pg_ctl are missing (needs root).
# Environment: PG_PORT (default: the first free port from PG_PORT_FROM, 54329, up to
# 54428), PG_DIR (default <repo>/.ci/pg), PG_DB (pausepoint).
# Status goes to stderr; stdout carries only the export line. If the server does not
# start (a PG_PORT in use, initdb failing, ...) it says why, exits non-zero and prints
# `false` on stdout, so that `eval "$(scripts/postgres.sh start)"` fails too.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PORT_GIVEN="${PG_PORT:-}"
PG_PORT="${PG_PORT:-54329}"
PG_DIR="${PG_DIR:-$ROOT/.ci/pg}"
PG_DB="${PG_DB:-pausepoint}"
PG_USER=postgres

log() { echo "postgres.sh: $*" >&2; }
die() { log "error: $*"; [[ "${COMMAND:-}" == start ]] && echo false; exit 1; }

in_use() {
    # Something accepts connections on 127.0.0.1:$1.
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

choose_port() {
    if [[ -n "$PORT_GIVEN" ]]; then
        [[ "$PG_PORT" =~ ^[0-9]+$ ]] || die "PG_PORT must be a port number, got '$PG_PORT'"
        if in_use "$PG_PORT"; then
            die "port $PG_PORT on 127.0.0.1 is in use; stop what listens there or choose another PG_PORT"
        fi
        return
    fi
    local port from="${1:-${PG_PORT_FROM:-54329}}"
    [[ "$from" =~ ^[0-9]+$ ]] || die "PG_PORT_FROM must be a port number, got '$from'"
    for port in $(seq "$from" 54428); do
        if ! in_use "$port"; then PG_PORT="$port"; return; fi
    done
    die "no free port in $from-54428 on 127.0.0.1; choose one with PG_PORT"
}

bind_failed() {
    # The server could not listen on its port: it was taken after choose_port looked,
    # or a client's outgoing connection uses it as its local port (54329-54428 lie in
    # Linux's ephemeral range), which a connect probe cannot see.
    grep -q "could not create any TCP/IP sockets" "$PG_DIR/server.log" 2>/dev/null
}

find_bindir() {
    local dir
    for dir in /usr/lib/postgresql/*/bin; do
        if [[ -x "$dir/initdb" && -x "$dir/pg_ctl" ]]; then echo "$dir"; fi
    done | sort -V | tail -n 1
}

ensure_binaries() {
    BINDIR="$(find_bindir)"
    if [[ -n "$BINDIR" ]]; then return; fi
    [[ "$(id -u)" == 0 ]] || die "PostgreSQL is not installed and installing it needs root"
    log "installing Debian's postgresql package"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    BINDIR="$(find_bindir)"
    [[ -n "$BINDIR" ]] || die "postgresql was installed but initdb/pg_ctl were not found"
}

as_pg() {
    # initdb and postgres refuse to run as root: run them as the postgres user.
    if [[ "$(id -u)" == 0 ]]; then
        runuser -u "$PG_USER" -- "$@"
    else
        "$@"
    fi
}

start() {
    if [[ -f "$PG_DIR/data/postmaster.pid" ]]; then
        die "a server already uses $PG_DIR; run '$0 stop' first"
    fi
    choose_port
    ensure_binaries
    mkdir -p "$PG_DIR"
    if [[ "$(id -u)" == 0 ]]; then
        id "$PG_USER" >/dev/null 2>&1 || useradd --system --home-dir "$PG_DIR" "$PG_USER"
        chown "$PG_USER" "$PG_DIR"
        # The postgres user must be able to reach the data directory.
        local dir="$PG_DIR"
        while [[ "$dir" != "/" ]]; do chmod o+x "$dir" 2>/dev/null || true; dir="$(dirname "$dir")"; done
    fi
    log "initdb in $PG_DIR/data (binaries: $BINDIR)"
    as_pg "$BINDIR/initdb" -D "$PG_DIR/data" -U "$PG_USER" --auth=trust -E UTF8 >"$PG_DIR/initdb.log" 2>&1 \
        || { cat "$PG_DIR/initdb.log" >&2; die "initdb failed"; }
    local tries=0
    while true; do
        log "starting on 127.0.0.1:$PG_PORT"
        rm -f "$PG_DIR/server.log"
        if as_pg "$BINDIR/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 30 \
            -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_DIR -c fsync=off" start >&2; then
            break
        fi
        tries=$((tries + 1))
        if [[ -z "$PORT_GIVEN" ]] && bind_failed && ((tries < 10 && PG_PORT < 54428)); then
            log "port $PG_PORT could not be bound; trying the next free one"
            choose_port $((PG_PORT + 1))
            continue
        fi
        cat "$PG_DIR/server.log" >&2 || true
        die "the server did not start (log above)"
    done
    as_pg "$BINDIR/createdb" -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" "$PG_DB" \
        || die "could not create database $PG_DB"
    as_pg "$BINDIR/psql" -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" -d "$PG_DB" -qAtc "SELECT 1" >/dev/null \
        || die "the server started but does not answer queries"
    log "ready"
    echo "export PAUSEPOINT_PG_URL=postgresql://$PG_USER@127.0.0.1:$PG_PORT/$PG_DB"
}

stop() {
    if [[ -f "$PG_DIR/data/postmaster.pid" ]]; then
        BINDIR="$(find_bindir)"
        [[ -n "$BINDIR" ]] || die "a server runs in $PG_DIR but pg_ctl was not found"
        log "stopping the server in $PG_DIR"
        as_pg "$BINDIR/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >&2 || die "pg_ctl stop failed"
    fi
    rm -rf "$PG_DIR"
    log "removed $PG_DIR"
}

COMMAND="${1:-}"
# Any other failure of `start` (set -e) also tells an `eval` that nothing started.
trap '[[ "$COMMAND" == start ]] && echo false' ERR
case "$COMMAND" in
    start) start ;;
    stop) stop ;;
    *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
