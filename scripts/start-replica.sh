#!/usr/bin/env bash
# A streaming replica of the local PostgreSQL, on loopback, for the search-replica tests and the
# lag measurement (docs/operations.md#search-replica). Idempotent: a replica already streaming on
# the port is kept; anything else there (a stopped or broken copy) is removed and made again with
# pg_basebackup, which takes seconds on a test cluster. Prints the replica's URL, alone, on stdout.
#
#   scripts/start-replica.sh           start it (or find it running), print postgres://…
#   scripts/start-replica.sh --stop    stop it and remove its folder
#
# Settings (environment): PRIMARY_HOST (127.0.0.1), PRIMARY_PORT (5432), REPLICA_PORT (5433),
# REPLICA_DATABASE (test: the database named in the printed URL), REPLICA_DIR
# (/tmp/claims-search-replica-$REPLICA_PORT), PG_BIN (/usr/lib/postgresql/<the primary's major
# version>/bin: pg_basebackup and the server must be the primary's version).
#
# The primary must allow replication connections from 127.0.0.1: as root this script puts
# `host replication all 127.0.0.1/32 trust` first in its pg_hba.conf when that line is not there,
# and reloads it. PostgreSQL refuses to run as root: run as root, the replica
# runs as the `postgres` user, which owns its folder.
set -euo pipefail

PRIMARY_HOST="${PRIMARY_HOST:-127.0.0.1}"
PRIMARY_PORT="${PRIMARY_PORT:-5432}"
REPLICA_PORT="${REPLICA_PORT:-5433}"
REPLICA_DATABASE="${REPLICA_DATABASE:-test}"
REPLICA_DIR="${REPLICA_DIR:-/tmp/claims-search-replica-$REPLICA_PORT}"

say() { echo "start-replica: $*" >&2; }

# Runs a PostgreSQL program as the user that owns the replica: `postgres` when we are root.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

primary_sql() { psql -h "$PRIMARY_HOST" -p "$PRIMARY_PORT" -U postgres -d postgres -XAtqc "$1"; }
replica_sql() { psql -h 127.0.0.1 -p "$REPLICA_PORT" -U postgres -d postgres -XAtqc "$1" 2>/dev/null; }

PG_BIN="${PG_BIN:-/usr/lib/postgresql/$(($(primary_sql 'SHOW server_version_num') / 10000))/bin}"

stop_replica() {
  if [ -f "$REPLICA_DIR/postmaster.pid" ]; then
    as_owner "$PG_BIN/pg_ctl" -D "$REPLICA_DIR" -m fast -w stop >&2 || true
  fi
  rm -rf "$REPLICA_DIR"
}

if [ "${1:-}" = "--stop" ]; then
  stop_replica
  say "stopped, $REPLICA_DIR removed"
  exit 0
fi

url="postgres://postgres@127.0.0.1:$REPLICA_PORT/$REPLICA_DATABASE"

# Already there and streaming from the primary: nothing to do.
if [ "$(replica_sql 'SELECT pg_is_in_recovery()')" = "t" ] &&
  [ "$(replica_sql "SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'")" = "1" ]; then
  echo "$url"
  exit 0
fi

# The primary's pg_hba.conf must let 127.0.0.1 connect for replication without a password ("all"
# does not cover replication). The line goes first: the first line that fits a connection decides,
# and Debian's default file has a replication line asking for a password.
hba="$(primary_sql 'SHOW hba_file')"
if ! grep -Eq '^[[:space:]]*host[[:space:]]+replication[[:space:]]+all[[:space:]]+127\.0\.0\.1/32[[:space:]]+trust' "$hba" 2>/dev/null; then
  if [ "$(id -u)" -ne 0 ]; then
    say "$hba lets no replication connection from 127.0.0.1 in without a password; as root, add first: host replication all 127.0.0.1/32 trust"
    exit 1
  fi
  sed -i '1i # Streaming replicas on loopback (claims-registry scripts/start-replica.sh)\nhost replication all 127.0.0.1/32 trust' "$hba"
  primary_sql 'SELECT pg_reload_conf()' >/dev/null
  say "added a replication line for 127.0.0.1 to $hba and reloaded the primary"
fi

if pg_isready -h 127.0.0.1 -p "$REPLICA_PORT" -q; then
  if [ ! -f "$REPLICA_DIR/standby.signal" ]; then
    say "port $REPLICA_PORT answers but is not this script's replica ($REPLICA_DIR): choose another REPLICA_PORT"
    exit 1
  fi
fi

# Anything left from before (stopped, or no longer streaming) is made again from scratch.
stop_replica
mkdir -p "$REPLICA_DIR"
chmod 700 "$REPLICA_DIR"
[ "$(id -u)" -eq 0 ] && chown postgres:postgres "$REPLICA_DIR"
say "copying the primary $PRIMARY_HOST:$PRIMARY_PORT into $REPLICA_DIR"
# -R writes standby.signal and primary_conninfo; -X stream brings the WAL written meanwhile.
as_owner "$PG_BIN/pg_basebackup" -h "$PRIMARY_HOST" -p "$PRIMARY_PORT" -U postgres -D "$REPLICA_DIR" \
  -R -X stream -c fast --no-sync >&2

# A standby needs these at least as large as its primary's (hot standby refuses to start otherwise).
settings="$(primary_sql "SELECT string_agg(name || ' = ' || setting, E'\n') FROM pg_settings
  WHERE name IN ('max_connections', 'max_worker_processes', 'max_wal_senders', 'max_prepared_transactions', 'max_locks_per_transaction')")"
# Debian keeps the primary's configuration outside its data folder: the replica gets its own.
as_owner tee "$REPLICA_DIR/postgresql.conf" >/dev/null <<EOF
port = $REPLICA_PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$REPLICA_DIR'
hot_standby = on
shared_buffers = 32MB
fsync = off
logging_collector = off
$settings
EOF
as_owner tee "$REPLICA_DIR/pg_hba.conf" >/dev/null <<EOF
local all all trust
host all all 127.0.0.1/32 trust
EOF
as_owner touch "$REPLICA_DIR/pg_ident.conf"

as_owner "$PG_BIN/pg_ctl" -D "$REPLICA_DIR" -l "$REPLICA_DIR/replica.log" -w -t 60 start >&2
for _ in $(seq 1 60); do
  [ "$(replica_sql "SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'")" = "1" ] && break
  sleep 0.5
done
if [ "$(replica_sql "SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'")" != "1" ]; then
  say "the replica started but does not stream from the primary; its log:"
  tail -n 30 "$REPLICA_DIR/replica.log" >&2
  exit 1
fi
say "streaming replica on 127.0.0.1:$REPLICA_PORT"
echo "$url"
