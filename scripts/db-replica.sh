# Mosaic Hybrid Retrieval - a streaming replica of the local cluster (sourced by scripts/db.sh).
#
# Usage: scripts/db.sh replica start|stop|status|url [owner|runtime|admin]
#
#   start   idempotently: the replication role on the primary (and a pg_hba entry for it
#           when none admits it, applied with pg_reload_conf), a base backup of the primary
#           (pg_basebackup -R) beside its data, the replica started on MOSAIC_PG_REPLICA_PORT
#           (default 54331), streaming and replaying; a replica of another cluster, or one
#           that cannot stream any more, is made again
#   stop    stop the replica and drop its slot (no error when not running)
#   status  print running/stopped and the replay lag; exit 0 when running, 3 when stopped
#   url     print a connection URL of the replica (owner by default)
#
# The replica is read-only, on its own port; the primary is never restarted or reconfigured
# beyond the role and that pg_hba line. It needs wal_level replica (PostgreSQL's default) and
# max_wal_senders > 0 on the primary. While it runs, a replication slot keeps the WAL it has
# not received yet (bursts of test databases outrun replay), up to the primary's
# max_slot_wal_keep_size (2GB in the cluster's configuration); without that bound no slot is
# used. Stopping the replica drops the slot, so a stopped replica holds no WAL back. It stands
# in locally for Aurora's replicas behind the RDS Proxy's read-only endpoint
# (MOSAIC_READ_DATABASE_URL points the service at it). A replica of the same primary already
# serving the port (from another checkout) is used as it is.

REPLICA_PORT="${MOSAIC_PG_REPLICA_PORT:-54331}"
REPLICATION_USER=mosaic_replicator
REPLICATION_PASS=mosaic_replicator
REPLICA_SLOT=mosaic_replica
PRIMARY_PORT="$PORT"

# Switches the script's cluster paths and port to the replica's.
use_replica() {
  PORT="$REPLICA_PORT"
  PRIMARY_BASE="$REPO/.mosaic/pg-replica"
  FALLBACK_BASE="/var/tmp/mosaic-pg-replica-$REPO_HASH"
  resolve_existing
}

# psql as the administrator on the primary, over TCP: the primary may have been
# started from another checkout, whose socket directory this one does not know.
primary_psql() {
  PGPASSWORD="$ADMIN_PASS" PGOPTIONS="-c client_min_messages=warning" \
    "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$HOST" -p "$PRIMARY_PORT" -U "$ADMIN_USER" -d postgres -At "$@"
}

# The primary lets the replication role stream WAL: the role, and a pg_hba line
# when none admits it from $HOST (a reload, not a restart).
prepare_primary() {
  "$PG_BIN/pg_isready" -q -h "$HOST" -p "$PRIMARY_PORT" \
    || die "the primary on $HOST:$PRIMARY_PORT is not running; start it first (scripts/db.sh ensure)"
  local wal senders
  wal="$(primary_psql -c "SHOW wal_level")"
  senders="$(primary_psql -c "SHOW max_wal_senders")"
  [ "$wal" != minimal ] && [ "$senders" -gt 0 ] \
    || die "the primary has wal_level=$wal, max_wal_senders=$senders; a replica needs wal_level replica and max_wal_senders > 0 (a restart of the primary)"
  primary_psql >/dev/null <<SQL
DO \$\$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$REPLICATION_USER') THEN
    CREATE ROLE $REPLICATION_USER;
  END IF;
END
\$\$;
ALTER ROLE $REPLICATION_USER LOGIN REPLICATION NOSUPERUSER PASSWORD '$REPLICATION_PASS';
SQL
  local admitted
  admitted="$(primary_psql -c "SELECT count(*) FROM pg_hba_file_rules
    WHERE type = 'host' AND 'replication' = ANY(database)
      AND ('all' = ANY(user_name) OR '$REPLICATION_USER' = ANY(user_name))
      AND address IN ('$HOST', 'all', '0.0.0.0') AND error IS NULL")"
  if [ "$admitted" = 0 ]; then
    local hba
    hba="$(primary_psql -c "SHOW hba_file")"
    log "admitting $REPLICATION_USER for replication in $hba (pg_reload_conf)"
    printf 'host replication %s %s/32 scram-sha-256\n' "$REPLICATION_USER" "$HOST" | as_pg tee -a "$hba" >/dev/null
    primary_psql -c "SELECT pg_reload_conf()" >/dev/null
  fi
}

# Whether the replica's data directory is a copy of the running primary.
replica_of_primary() {
  local mine theirs
  mine="$(as_pg "$PG_BIN/pg_controldata" "$DATA" 2>/dev/null | sed -n 's/^Database system identifier: *//p')"
  theirs="$(primary_psql -c "SELECT system_identifier FROM pg_control_system()")"
  [ -n "$mine" ] && [ "$mine" = "$theirs" ]
}

# The slot, when the primary bounds what a slot may hold back.
replica_slot_bounded() {
  [ "$(primary_psql -c "SHOW max_slot_wal_keep_size")" != -1 ]
}

drop_replica_slot() {
  primary_psql -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
                   WHERE slot_name = '$REPLICA_SLOT' AND NOT active" >/dev/null
}

replica_base_backup() {
  local slot=()
  drop_replica_slot
  replica_slot_bounded && slot=(-C -S "$REPLICA_SLOT")
  log "pg_basebackup of $HOST:$PRIMARY_PORT into $DATA"
  as_pg env PGPASSWORD="$REPLICATION_PASS" "$PG_BIN/pg_basebackup" -h "$HOST" -p "$PRIMARY_PORT" \
    -U "$REPLICATION_USER" -D "$DATA" -R -X stream -c fast "${slot[@]}" >"$LOGDIR/basebackup.log" 2>&1 \
    || { tail -n 20 "$LOGDIR/basebackup.log" >&2; die "pg_basebackup failed (log: $LOGDIR/basebackup.log)"; }
}

# The replica's own settings: its port and socket, the primary's TLS certificate.
replica_conf() {
  TLS_DIR="$(dirname "$(primary_psql -c "SHOW ssl_cert_file")")" mosaic_conf
  printf 'hot_standby = on\n'
}

replica_sql() {
  "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$RUN" -p "$PORT" -U "$ADMIN_USER" -d postgres -At "$@"
}

# Waits (up to $1 seconds) until the replica streams from the primary.
replica_streaming() {
  local i
  for ((i = 0; i < $1; i++)); do
    [ "$(replica_sql -c "SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'" 2>/dev/null)" = 1 ] && return 0
    sleep 1
  done
  return 1
}

replica_up() {
  local conf
  conf="$(replica_conf)"
  if [ "$conf" != "$(cat "$DATA/mosaic.conf" 2>/dev/null)" ]; then
    printf '%s\n' "$conf" | as_pg tee "$DATA/mosaic.conf" >/dev/null
    pg_running && replica_sql -c "SELECT pg_reload_conf()" >/dev/null
  fi
  if ! pg_running; then
    # The slot named in the replica's configuration (dropped when it stopped).
    if grep -q "primary_slot_name" "$DATA/postgresql.auto.conf" 2>/dev/null; then
      primary_psql -c "SELECT pg_create_physical_replication_slot('$REPLICA_SLOT')
                       WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = '$REPLICA_SLOT')" >/dev/null
    fi
    log "starting the replica ($DATA, port $PORT)"
    as_pg "$PG_BIN/pg_ctl" start -D "$DATA" -w -t 120 -l "$LOGDIR/postgres.log" >/dev/null 2>&1 \
      || { tail -n 30 "$LOGDIR/postgres.log" >&2; die "pg_ctl start of the replica failed (log: $LOGDIR/postgres.log)"; }
  fi
  # A test that paused replay and died leaves it paused.
  replica_sql -c "SELECT pg_wal_replay_resume() WHERE pg_is_wal_replay_paused()" >/dev/null
}

# Whether the port is served by a running replica of this primary (perhaps another checkout's).
served_elsewhere() {
  local theirs mine
  theirs="$(PGPASSWORD="$ADMIN_PASS" "$PG_BIN/psql" -X -h "$HOST" -p "$PORT" -U "$ADMIN_USER" -d postgres -At \
    -c "SELECT system_identifier FROM pg_control_system() WHERE pg_is_in_recovery()" 2>/dev/null)" || return 1
  mine="$(primary_psql -c "SELECT system_identifier FROM pg_control_system()")"
  [ -n "$theirs" ] && [ "$theirs" = "$mine" ]
}

replica_start() {
  prepare_primary
  if ! pg_running && served_elsewhere; then
    echo "mosaic db: a replica of $HOST:$PRIMARY_PORT already serves $HOST:$PORT"
    return 0
  fi
  prepare_base
  if [ -f "$DATA/PG_VERSION" ] && ! replica_of_primary; then
    log "$DATA is not a replica of the running primary; making it again"
    replica_stop >/dev/null
    as_pg rm -rf "$DATA"
  fi
  [ -f "$DATA/PG_VERSION" ] || replica_base_backup
  replica_up
  if ! replica_streaming 30; then
    # Without a slot the primary may have recycled WAL a stopped replica still needs.
    log "the replica does not stream; making it again from a fresh base backup"
    replica_stop >/dev/null
    as_pg rm -rf "$DATA"
    replica_base_backup
    replica_up
    replica_streaming 60 || die "the replica does not stream (log: $LOGDIR/postgres.log)"
  fi
  echo "mosaic db: replica of $HOST:$PRIMARY_PORT streaming on $HOST:$PORT ($DATA)"
}

replica_stop() {
  stop_cluster replica
  # No WAL is held back for a stopped replica.
  primary_psql -c "SELECT 1" >/dev/null 2>&1 && drop_replica_slot
  return 0
}

replica_status() {
  if ! pg_running; then
    echo "mosaic db: replica stopped (port $PORT)"
    return 3
  fi
  local lag
  lag="$(replica_sql -c "SELECT coalesce(round(extract(epoch FROM now() - pg_last_xact_replay_timestamp()) * 1000), 0) || ' ms since the last replayed commit, ' || (SELECT coalesce(max(status), 'no') FROM pg_stat_wal_receiver) || ' receiver'")"
  echo "mosaic db: replica running on $HOST:$PORT ($DATA; $lag)"
}

cmd_replica() {
  local sub="${1:-}"
  [ $# -gt 0 ] && shift
  use_replica
  case "$sub" in
    start)  replica_start ;;
    stop)   replica_stop ;;
    status) replica_status ;;
    url)    cmd_url "$@" ;;
    *) usage ;;
  esac
}
