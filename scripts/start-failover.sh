#!/usr/bin/env bash
# A pg_auto_failover formation on loopback, for the failover test and for trying a failover by hand
# (docs/operations.md#failover): a monitor and two PostgreSQL nodes (a primary and its synchronous
# standby), and PgBouncer in transaction mode in front of the formation's primary. Everything lives
# in one folder and runs as the `postgres` user when started as root (PostgreSQL and pg_autoctl
# refuse root). Nothing is installed here: the Debian packages postgresql-15-auto-failover
# (pg_autoctl) and pgbouncer must be there (.ci/run installs them).
#
#   scripts/start-failover.sh           start it (or find it running); prints two lines on stdout:
#                                         DATABASE_URL=postgres://…,…?target_session_attrs=read-write
#                                         PGBOUNCER_URL=postgres://…
#   scripts/start-failover.sh --stop    stop it and remove its folder
#
# Settings (environment): FAILOVER_DIR (/tmp/claims-failover), FAILOVER_PORT (6500: the monitor;
# the nodes take the next two ports, PgBouncer the fourth), FAILOVER_DATABASE (claims),
# PG_BIN (/usr/lib/postgresql/15/bin), FAILOVER_QUICK (1: the monitor declares a silent node dead
# after 6 s instead of 20 s, and the standby waits 6 s instead of 30 s for the old primary to stop
# itself, so that a test's failover takes about 15 s; 0 keeps pg_auto_failover's defaults).
set -euo pipefail

FAILOVER_DIR="${FAILOVER_DIR:-/tmp/claims-failover}"
FAILOVER_PORT="${FAILOVER_PORT:-6500}"
FAILOVER_DATABASE="${FAILOVER_DATABASE:-claims}"
PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
FAILOVER_QUICK="${FAILOVER_QUICK:-1}"

MONITOR_PORT="$FAILOVER_PORT"
NODE1_PORT=$((FAILOVER_PORT + 1))
NODE2_PORT=$((FAILOVER_PORT + 2))
PGBOUNCER_PORT=$((FAILOVER_PORT + 3))

say() { echo "start-failover: $*" >&2; }

# pg_autoctl keeps its configuration and state under the XDG folders: this formation's, in its folder.
export XDG_CONFIG_HOME="$FAILOVER_DIR/config" XDG_DATA_HOME="$FAILOVER_DIR/share" XDG_RUNTIME_DIR="$FAILOVER_DIR/run"
export PG_CONFIG="$PG_BIN/pg_config" PATH="$PG_BIN:$PATH"
OWNER=postgres

# Runs a program as the user that owns the formation: `postgres` when we are root.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u "$OWNER" -- env XDG_CONFIG_HOME="$XDG_CONFIG_HOME" XDG_DATA_HOME="$XDG_DATA_HOME" \
      XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" PG_CONFIG="$PG_CONFIG" PATH="$PATH" "$@"
  else
    "$@"
  fi
}

monitor_uri="postgres://autoctl_node@127.0.0.1:$MONITOR_PORT/pg_auto_failover?sslmode=disable"
monitor_sql() { psql "postgres://autoctl_node@127.0.0.1:$MONITOR_PORT/pg_auto_failover" -XAtqc "$1" 2>/dev/null; }
node_sql() { psql -h 127.0.0.1 -p "$1" -U postgres -d postgres -XAtqc "$2" 2>/dev/null; }

stop_all() {
  if [ -f "$FAILOVER_DIR/pgbouncer/pgbouncer.pid" ]; then
    kill -TERM "$(cat "$FAILOVER_DIR/pgbouncer/pgbouncer.pid")" 2>/dev/null || true
  fi
  for node in node1 node2 monitor; do
    [ -d "$FAILOVER_DIR/$node" ] || continue
    as_owner pg_autoctl stop --pgdata "$FAILOVER_DIR/$node" --immediate >/dev/null 2>&1 || true
  done
  # Whatever is left (a pg_autoctl that was killed leaves its PostgreSQL running, and the reverse):
  # each pg_autoctl runs in a session of its own (setsid), its process group with its PostgreSQL.
  for pidfile in $(find "$FAILOVER_DIR/run" -name pg_autoctl.pid 2>/dev/null) "$FAILOVER_DIR"/*/postmaster.pid; do
    pid="$(head -n 1 "$pidfile" 2>/dev/null || true)"
    [ -n "$pid" ] || continue
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  done
  sleep 0.5
  rm -rf "$FAILOVER_DIR"
}

if [ "${1:-}" = "--stop" ]; then
  stop_all
  say "stopped, $FAILOVER_DIR removed"
  exit 0
fi

for program in pg_autoctl pgbouncer; do
  command -v "$program" >/dev/null || {
    say "$program is missing: apt-get install postgresql-15-auto-failover pgbouncer"
    exit 1
  }
done

# The formation's URI, as pg_autoctl gives it (both nodes, target_session_attrs=read-write).
formation_uri() { as_owner pg_autoctl show uri --pgdata "$FAILOVER_DIR/monitor" --formation default 2>/dev/null; }

print_urls() {
  # pg_autoctl's URI names no user (libpq would take the system user's name) and sslmode=prefer.
  echo "DATABASE_URL=$(formation_uri | sed -e 's#^postgres://#postgres://postgres@#' -e 's#sslmode=prefer#sslmode=disable#')"
  echo "MONITOR_URL=postgres://autoctl_node@127.0.0.1:$MONITOR_PORT/pg_auto_failover"
  echo "PGBOUNCER_URL=postgres://postgres@127.0.0.1:$PGBOUNCER_PORT/$FAILOVER_DATABASE"
}

# Already there: a primary and a secondary, and PgBouncer answering.
if [ "$(monitor_sql "SELECT string_agg(reportedstate::text, ',' ORDER BY reportedstate::text) FROM pgautofailover.node")" = "primary,secondary" ] &&
  pg_isready -h 127.0.0.1 -p "$PGBOUNCER_PORT" -q; then
  print_urls
  exit 0
fi

for port in "$MONITOR_PORT" "$NODE1_PORT" "$NODE2_PORT" "$PGBOUNCER_PORT"; do
  if pg_isready -h 127.0.0.1 -p "$port" -q && [ ! -d "$FAILOVER_DIR" ]; then
    say "port $port answers but is not this script's: choose another FAILOVER_PORT"
    exit 1
  fi
done

stop_all
mkdir -p "$FAILOVER_DIR"/{config,share,run,pgbouncer}
chmod 700 "$FAILOVER_DIR/run"
[ "$(id -u)" -eq 0 ] && chown -R "$OWNER:$OWNER" "$FAILOVER_DIR"

# Starts `pg_autoctl create … --run` for one node, in the background, in a session of its own
# (it outlives this script), its output in <folder>.log.
run_autoctl() {
  local name="$1"
  shift
  as_owner setsid pg_autoctl "$@" --pgdata "$FAILOVER_DIR/$name" --run </dev/null >"$FAILOVER_DIR/$name.log" 2>&1 &
}

wait_until() {
  local what="$1" seconds="$2" check="$3"
  for _ in $(seq 1 $((seconds * 2))); do
    if eval "$check"; then return 0; fi
    sleep 0.5
  done
  say "$what did not happen within ${seconds}s; the logs:"
  tail -n 20 "$FAILOVER_DIR"/*.log >&2
  exit 1
}

say "starting the monitor on 127.0.0.1:$MONITOR_PORT in $FAILOVER_DIR"
run_autoctl monitor create monitor --pgport "$MONITOR_PORT" --hostname 127.0.0.1 --auth trust --no-ssl
wait_until "the monitor's start" 60 '[ -n "$(monitor_sql "SELECT 1 FROM pgautofailover.formation")" ]'

if [ "$FAILOVER_QUICK" = "1" ]; then
  # Quicker than the defaults (20 s, 30 s), for a test: see docs/operations.md#failover.
  psql -h 127.0.0.1 -p "$MONITOR_PORT" -U postgres -d pg_auto_failover -XAtq >/dev/null <<'SQL'
ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout = '6s';
ALTER SYSTEM SET pgautofailover.primary_demote_timeout = '6s';
ALTER SYSTEM SET pgautofailover.health_check_period = '1s';
ALTER SYSTEM SET pgautofailover.health_check_retry_delay = '1s';
SELECT pg_reload_conf();
SQL
fi

node_args=(--hostname 127.0.0.1 --auth trust --no-ssl --monitor "$monitor_uri" --dbname "$FAILOVER_DATABASE"
  --replication-quorum true --candidate-priority 50)
say "starting node1 on 127.0.0.1:$NODE1_PORT"
run_autoctl node1 create postgres --name node1 --pgport "$NODE1_PORT" "${node_args[@]}"
wait_until "node1 becoming the primary" 90 '[ "$(monitor_sql "SELECT reportedstate FROM pgautofailover.node WHERE nodename = '"'node1'"'")" = "single" ]'
say "starting node2 on 127.0.0.1:$NODE2_PORT"
run_autoctl node2 create postgres --name node2 --pgport "$NODE2_PORT" "${node_args[@]}"
wait_until "node2 becoming node1's secondary" 120 '[ "$(monitor_sql "SELECT string_agg(reportedstate::text, '"','"' ORDER BY nodename) FROM pgautofailover.node")" = "primary,secondary" ]'

# A claim answered 201 is on both machines: the secondary is a synchronous standby while it is
# healthy (replication quorum), and no second standby is required (number_sync_standbys 0).
as_owner pg_autoctl set formation number-sync-standbys 0 --pgdata "$FAILOVER_DIR/monitor" >/dev/null 2>&1 || true
say "node1: synchronous_standby_names = $(node_sql "$NODE1_PORT" 'SHOW synchronous_standby_names')"

# PgBouncer in transaction mode, in front of node1 (the first primary): the service's settings
# for it are DATABASE_POOLER=transaction and this URL. It does not follow a failover by itself: see
# docs/operations.md#pgbouncer for a PgBouncer beside each node. Only the startup parameters that
# PgBouncer keeps per client (TimeZone, application_name) are accepted, and extra_float_digits.
cat >"$FAILOVER_DIR/pgbouncer/pgbouncer.ini" <<EOF
[databases]
* = host=127.0.0.1 port=$NODE1_PORT

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGBOUNCER_PORT
unix_socket_dir = $FAILOVER_DIR/pgbouncer
auth_type = trust
auth_file = $FAILOVER_DIR/pgbouncer/userlist.txt
pool_mode = transaction
max_client_conn = 500
default_pool_size = 20
ignore_startup_parameters = extra_float_digits
server_reset_query =
logfile = $FAILOVER_DIR/pgbouncer/pgbouncer.log
pidfile = $FAILOVER_DIR/pgbouncer/pgbouncer.pid
EOF
echo '"postgres" ""' >"$FAILOVER_DIR/pgbouncer/userlist.txt"
[ "$(id -u)" -eq 0 ] && chown -R "$OWNER:$OWNER" "$FAILOVER_DIR/pgbouncer"
as_owner pgbouncer -d "$FAILOVER_DIR/pgbouncer/pgbouncer.ini" >&2
wait_until "PgBouncer's start" 20 'pg_isready -h 127.0.0.1 -p "$PGBOUNCER_PORT" -q'

say "a monitor on $MONITOR_PORT, node1 (primary) on $NODE1_PORT, node2 (secondary) on $NODE2_PORT, PgBouncer on $PGBOUNCER_PORT"
print_urls
