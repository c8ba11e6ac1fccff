#!/usr/bin/env bash
# Mosaic Hybrid Retrieval - private local PostgreSQL 15 cluster (pgvector 0.8.x + pg_trgm).
#
# Usage: scripts/db.sh install|start|stop|status|url [owner|runtime|admin]|ensure|psql [args]
#        scripts/db.sh replica start|stop|status|url [owner|runtime|admin]
#
#   install  idempotently install PostgreSQL 15, postgresql-server-dev-15 and pgvector >= 0.8.0
#            (pgvector built from Debian's source, see MOSAIC_PGVECTOR below; system apt sources untouched)
#   start    install checks, initdb if needed, start the cluster, create roles/db/extensions
#   stop     stop the cluster (no error when not running)
#   status   print running/stopped; exit 0 when running, 3 when stopped
#   url      print a connection URL (owner by default)
#   ensure   install + start (used by the Makefile)
#   psql     run psql as mosaic_admin against database mosaic
#   replica  a streaming replica of the running cluster (scripts/db-replica.sh)
#
# Environment: MOSAIC_PG_PORT (default 54329), MOSAIC_PG_REPLICA_PORT (default 54331).
# The cluster lives in $REPO/.mosaic/pg (or, when running as root and the postgres OS user
# cannot reach the repo, in /var/tmp/mosaic-pg-<hash> with $REPO/.mosaic/pg as a symlink).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$SCRIPT_DIR/.." && pwd)"

PG_MAJOR=15
# Debian's PostgreSQL 15, or another installation of it (MOSAIC_PG_BINDIR: e.g. a copy
# in which to try another pgvector build without touching the system's).
PG_BIN="${MOSAIC_PG_BINDIR:-/usr/lib/postgresql/$PG_MAJOR/bin}"
PG_CONFIG="$PG_BIN/pg_config"
PG_SHARE="$("$PG_CONFIG" --sharedir 2>/dev/null || echo "/usr/share/postgresql/$PG_MAJOR")"
PORT="${MOSAIC_PG_PORT:-54329}"
HOST=127.0.0.1
DB=mosaic
ADMIN_USER=mosaic_admin
ADMIN_PASS=mosaic_admin
OWNER_USER=mosaic_owner
OWNER_PASS=mosaic_owner
RUNTIME_USER=mosaic_runtime
RUNTIME_PASS=mosaic_runtime
# The pgvector build (MOSAIC_PGVECTOR; README "The local database" says why):
#   0.8.6  the default: Debian's 0.8.6-1 source, its upstream tarball fetched from the Debian
#          archive's pool and checked against the SHA-256 of Debian's signed .dsc; it has the
#          HNSW fixes of 0.8.2 (parallel build), 0.8.3 (vacuum corruption), 0.8.4 (graph repair)
#   0.8.0  Debian trixie's source package (apt-get source): the version Aurora PostgreSQL 16 ships
PGVECTOR="${MOSAIC_PGVECTOR:-0.8.6}"
PGVECTOR_POOL=http://deb.debian.org/debian/pool/main/p/pgvector
declare -A PGVECTOR_ORIG_SHA256=(
  [0.8.6]=25c9b78cfdaa43c66788d7490246ac24e4fe1c86f19c4b60c089b723f84a4a0d
)
CACHE_HOME="${HOME:-/root}/.cache/mosaic"
PGVECTOR_SRC="$CACHE_HOME/pgvector-src"
REPO_HASH="$(printf '%s' "$REPO" | sha1sum | cut -c1-10)"
PRIMARY_BASE="$REPO/.mosaic/pg"
FALLBACK_BASE="/var/tmp/mosaic-pg-$REPO_HASH"

log() { printf 'mosaic db: %s\n' "$*" >&2; }
die() { printf 'mosaic db: ERROR: %s\n' "$*" >&2; exit 1; }

is_root() { [ "$(id -u)" -eq 0 ]; }

# ---------------------------------------------------------------------------------------------
# privilege helpers
# ---------------------------------------------------------------------------------------------
SUDO=()
have_priv() {
  if is_root; then SUDO=(); return 0; fi
  if command -v sudo >/dev/null 2>&1; then SUDO=(sudo); return 0; fi
  return 1
}

# Run a command as the OS user that owns the cluster (postgres when we are root).
as_pg() {
  # (cd /: postgres may not be able to access the caller's cwd)
  if is_root; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

APT_UPDATED=0
apt_install() {
  if [ "$APT_UPDATED" -eq 0 ]; then
    log "apt-get update"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    APT_UPDATED=1
  fi
  log "apt-get install $*"
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}

pkg_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# version_ge A B  -> true when A >= B
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

vector_version() {
  local f="$PG_SHARE/extension/vector.control"
  [ -f "$f" ] || return 1
  sed -n "s/^[[:space:]]*default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" "$f" | head -n1
}

# The installed pgvector is the selected build.
pgvector_ok() {
  [ "$(vector_version 2>/dev/null)" = "$PGVECTOR" ] \
    && [ -f "$("$PG_CONFIG" --pkglibdir 2>/dev/null)/vector.so" ]
}

check_pgvector_choice() {
  [ "$PGVECTOR" = 0.8.0 ] || [ -n "${PGVECTOR_ORIG_SHA256[$PGVECTOR]:-}" ] \
    || die "MOSAIC_PGVECTOR=$PGVECTOR: use 0.8.0 or ${!PGVECTOR_ORIG_SHA256[*]}"
}

# ---------------------------------------------------------------------------------------------
# install
# ---------------------------------------------------------------------------------------------
cmd_install() {
  check_pgvector_choice
  local pkgs=() need_vector=0
  [ -x "$PG_BIN/pg_ctl" ] || pkgs+=(postgresql-15 postgresql-contrib)
  [ -f "$PG_SHARE/extension/pg_trgm.control" ] || [ "${#pkgs[@]}" -gt 0 ] || pkgs+=(postgresql-contrib)
  pkg_installed postgresql-server-dev-15 || pkgs+=(postgresql-server-dev-15)
  command -v make >/dev/null 2>&1 || pkgs+=(make)
  command -v gcc >/dev/null 2>&1 || pkgs+=(gcc)
  command -v openssl >/dev/null 2>&1 || pkgs+=(openssl)
  if ! pgvector_ok; then
    need_vector=1
    pkg_installed libc6-dev || pkgs+=(libc6-dev)
    command -v xz >/dev/null 2>&1 || pkgs+=(xz-utils)
    [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] || pkgs+=(debian-archive-keyring)
  fi

  if [ "${#pkgs[@]}" -eq 0 ] && [ "$need_vector" -eq 0 ]; then
    return 0
  fi

  if ! have_priv; then
    log "cannot install: not root and sudo is not available. Missing:"
    [ "${#pkgs[@]}" -gt 0 ] && log "  packages: ${pkgs[*]}"
    [ "$need_vector" -eq 1 ] && log "  pgvector $PGVECTOR (have: $(vector_version 2>/dev/null || echo none))"
    log "fix (as root):"
    [ "${#pkgs[@]}" -gt 0 ] && log "  apt-get update && apt-get install -y --no-install-recommends ${pkgs[*]}"
    log "  $REPO/scripts/db.sh install"
    exit 1
  fi

  if [ "${#pkgs[@]}" -gt 0 ]; then
    apt_install "${pkgs[@]}"
  fi
  [ -x "$PG_BIN/pg_ctl" ] || die "$PG_BIN/pg_ctl still missing after install"
  [ -f "$PG_SHARE/extension/pg_trgm.control" ] || die "pg_trgm still missing after install"
  [ -x "$PG_CONFIG" ] || die "$PG_CONFIG missing (postgresql-server-dev-15 not installed?)"

  if ! pgvector_ok; then
    build_pgvector
    pgvector_ok || die "pgvector $PGVECTOR still not installed after build (have: $(vector_version 2>/dev/null || echo none))"
    log "pgvector $(vector_version) installed"
  fi
}

build_pgvector() {
  local D="$PGVECTOR_SRC"
  local -a aptopts=(
    -o Dir::Etc::SourceList=/dev/null
    -o "Dir::Etc::SourceParts=$D"
    -o "Dir::State::Lists=$D/lists"
    -o "Dir::Cache=$D/cache"
  )
  # apt drops privileges to _apt for downloads; _apt usually cannot reach $HOME (0700) as root.
  is_root && aptopts+=(-o APT::Sandbox::User=root)

  mkdir -p "$D/lists/partial" "$D/cache/archives/partial"
  rm -f "$D"/pgvector_*
  local orig
  if [ "$PGVECTOR" = 0.8.0 ]; then
    log "building pgvector 0.8.0 from Debian trixie's source package in $D"
    printf '%s\n' 'Types: deb-src' 'URIs: http://deb.debian.org/debian' 'Suites: trixie' \
      'Components: main' 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' >"$D/trixie.sources"
    log "apt-get update (private trixie deb-src index)"
    apt-get "${aptopts[@]}" update -qq >&2
    log "apt-get source --download-only pgvector"
    (cd "$D" && apt-get "${aptopts[@]}" source --download-only pgvector=0.8.0-1 >&2)
    orig="$D/pgvector_0.8.0.orig.tar.gz"
  else
    orig="$D/pgvector_$PGVECTOR.orig.tar.gz"
    log "building pgvector $PGVECTOR from Debian's source ($(basename "$orig"), SHA-256 checked) in $D"
    if ! /usr/lib/apt/apt-helper "${aptopts[@]}" download-file "$PGVECTOR_POOL/$(basename "$orig")" \
        "$orig" "SHA256:${PGVECTOR_ORIG_SHA256[$PGVECTOR]}" >&2; then
      # The archive's pool keeps a source only while a suite carries it: once
      # Debian moves past this version, build trixie's instead of failing.
      log "WARNING: cannot fetch $(basename "$orig") from the Debian archive (superseded there?);"
      log "WARNING: building pgvector 0.8.0 from trixie instead (MOSAIC_PGVECTOR=0.8.0 chooses it quietly)"
      PGVECTOR=0.8.0
      build_pgvector
      return
    fi
  fi
  [ -f "$orig" ] || die "no $(basename "$orig") downloaded into $D"
  log "unpacking $(basename "$orig")"
  rm -rf "$D/build"
  mkdir -p "$D/build"
  tar -xf "$orig" -C "$D/build" --strip-components=1

  log "make -j2 (pgvector)"
  make -C "$D/build" -j2 PG_CONFIG="$PG_CONFIG" >"$D/build.log" 2>&1 \
    || { tail -n 30 "$D/build.log" >&2; die "pgvector build failed (log: $D/build.log)"; }
  log "make install (pgvector)"
  "${SUDO[@]}" make -C "$D/build" install PG_CONFIG="$PG_CONFIG" >>"$D/build.log" 2>&1 \
    || { tail -n 30 "$D/build.log" >&2; die "pgvector install failed (log: $D/build.log)"; }
}

# ---------------------------------------------------------------------------------------------
# cluster location
# ---------------------------------------------------------------------------------------------
BASE=""
DATA=""
RUN=""
LOGDIR=""

set_paths() {
  BASE="$1"
  DATA="$BASE/data"
  LOGDIR="$BASE/log"
  RUN="$BASE/run"
  # unix socket paths are limited to ~107 bytes
  if [ $(( ${#RUN} + 20 )) -gt 100 ]; then
    RUN="/tmp/mosaic-pgrun-$REPO_HASH"
  fi
}

# Resolve an existing cluster location without creating anything.
resolve_existing() {
  if [ -L "$PRIMARY_BASE" ]; then
    set_paths "$(readlink -f "$PRIMARY_BASE")"
  else
    set_paths "$PRIMARY_BASE"
  fi
}

# Decide (and create) the cluster location; used by start.
prepare_base() {
  resolve_existing
  if [ -f "$DATA/PG_VERSION" ]; then
    :
  elif is_root; then
    mkdir -p "$REPO/.mosaic"
    if [ -L "$PRIMARY_BASE" ]; then
      :  # already pointing at the fallback, cluster not yet initialised
    elif runuser -u postgres -- test -x "$REPO/.mosaic"; then
      set_paths "$PRIMARY_BASE"
    else
      if [ -e "$FALLBACK_BASE" ]; then
        local owner
        owner="$(stat -c %U "$FALLBACK_BASE")"
        [ "$owner" = root ] || [ "$owner" = postgres ] \
          || die "$FALLBACK_BASE exists but is owned by '$owner'; remove it"
      fi
      log "postgres OS user cannot reach $REPO; placing the cluster in $FALLBACK_BASE"
      mkdir -p "$FALLBACK_BASE"
      [ -d "$PRIMARY_BASE" ] && rmdir "$PRIMARY_BASE" 2>/dev/null || true
      ln -sfn "$FALLBACK_BASE" "$PRIMARY_BASE"
      set_paths "$FALLBACK_BASE"
    fi
  fi

  mkdir -p "$BASE" "$LOGDIR" "$RUN"
  chmod 0700 "$RUN"
  if is_root; then
    chown postgres:postgres "$BASE" "$LOGDIR" "$RUN"
    [ -d "$DATA" ] && [ "$(stat -c %U "$DATA")" != postgres ] && chown -R postgres:postgres "$DATA"
  fi
  return 0
}

pg_running() {
  [ -f "$DATA/PG_VERSION" ] || return 1
  as_pg "$PG_BIN/pg_ctl" status -D "$DATA" >/dev/null 2>&1
}

# ---------------------------------------------------------------------------------------------
# start
# ---------------------------------------------------------------------------------------------
# shared_buffers: a quarter of the memory this machine (or its container's
# cgroup limit) has, PostgreSQL's usual starting point, between 128 MB and
# 8 GB. The search's arms read the HNSW graphs, the text indexes and the
# table on every query; with too small a buffer cache they are copied in
# from the operating system's cache again and again. MOSAIC_PG_SHARED_BUFFERS
# (e.g. 512MB) overrides it.
shared_buffers_setting() {
  if [ -n "${MOSAIC_PG_SHARED_BUFFERS:-}" ]; then
    echo "$MOSAIC_PG_SHARED_BUFFERS"
    return
  fi
  local kb limit mb
  kb="$(awk '/^MemTotal:/ {print $2}' /proc/meminfo 2>/dev/null || true)"
  limit="$(cat /sys/fs/cgroup/memory.max 2>/dev/null || true)"
  if [[ "$limit" =~ ^[0-9]+$ ]] && { [ -z "$kb" ] || [ $((limit / 1024)) -lt "$kb" ]; }; then
    kb=$((limit / 1024))
  fi
  if [ -z "$kb" ]; then
    echo 512MB
    return
  fi
  mb=$((kb / 4 / 1024))
  [ "$mb" -lt 128 ] && mb=128
  [ "$mb" -gt 8192 ] && mb=8192
  echo "${mb}MB"
}

mosaic_conf() {
  local dsm=posix shm_kb
  # parallel HNSW/IVFFlat builds put maintenance_work_mem into dynamic shared memory;
  # containers often have a tiny /dev/shm, so fall back to mmap (files in pg_dynshmem).
  shm_kb="$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2 {print $2}')"
  if [ -z "$shm_kb" ] || [ "$shm_kb" -lt 2097152 ]; then dsm=mmap; fi
  cat <<EOF
# managed by scripts/db.sh - rewritten on start
listen_addresses = '$HOST'
port = $PORT
unix_socket_directories = '$RUN'
unix_socket_permissions = 0700
max_connections = 200
shared_buffers = $(shared_buffers_setting)
maintenance_work_mem = 1GB
dynamic_shared_memory_type = $dsm
fsync = on
# The buffer cache outlives a restart: pg_prewarm's autoprewarm worker
# records which blocks it holds (every 5 minutes and at shutdown) and reads
# them back in after the next start, so the first searches after a restart
# find the graphs and indexes where the last ones left them instead of
# copying them in again (at a million products the first bench run after a
# restart gave unfiltered p95 114-130 ms without it, 57-60 with it;
# BENCHMARKS.md, "The buffer cache after a restart").
shared_preload_libraries = 'pg_prewarm'
pg_prewarm.autoprewarm = on
# WAL a lagging replica's slot may hold back (scripts/db.sh replica) before
# the slot is given up; the replica is then made again.
max_slot_wal_keep_size = 2GB
password_encryption = 'scram-sha-256'
# TLS with a private test CA (tls/ca.crt), so clients can test verified TLS
# locally; plain TCP keeps working.
ssl = on
ssl_cert_file = '${TLS_DIR:-$BASE/tls}/server.crt'
ssl_key_file = '${TLS_DIR:-$BASE/tls}/server.key'
EOF
}

# A private CA and a server certificate for 'localhost' (no IP address in
# it, on purpose: a client that connects to 127.0.0.1 and verifies the host
# name must refuse it). Regenerated when missing or within 30 days of expiry.
ensure_tls() {
  local dir="$BASE/tls"
  if [ -f "$dir/server.crt" ] && [ -f "$dir/server.key" ] && [ -f "$dir/ca.crt" ] \
      && openssl x509 -in "$dir/server.crt" -noout -checkend 2592000 >/dev/null 2>&1; then
    return 0
  fi
  log "creating the local test CA and server certificate ($dir)"
  mkdir -p "$dir"
  local ext
  ext="$(mktemp)"
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost\n' >"$ext"
  openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 825 -subj "/CN=Mosaic local test CA" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      -keyout "$dir/ca.key" -out "$dir/ca.crt" >/dev/null 2>&1 || die "openssl: CA certificate"
  openssl req -newkey rsa:2048 -nodes -sha256 -subj "/CN=localhost" \
      -keyout "$dir/server.key" -out "$dir/server.csr" >/dev/null 2>&1 || die "openssl: server key"
  openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
      -days 825 -sha256 -extfile "$ext" -out "$dir/server.crt" >/dev/null 2>&1 || die "openssl: server certificate"
  rm -f "$ext" "$dir/server.csr" "$dir/ca.srl"
  chmod 0600 "$dir/server.key" "$dir/ca.key"
  chmod 0644 "$dir/ca.crt" "$dir/server.crt"
  chmod 0755 "$dir"
  if is_root; then chown -R postgres:postgres "$dir"; fi
  if pg_running; then admin_psql -d postgres -c "SELECT pg_reload_conf()" >/dev/null; fi
}

init_cluster() {
  log "initdb $DATA"
  local pwfile locale=C
  if locale -a 2>/dev/null | grep -qix 'c\.utf-\?8'; then locale=C.UTF-8; fi
  pwfile="$(mktemp "$BASE/.pwfile.XXXXXX")"
  printf '%s\n' "$ADMIN_PASS" >"$pwfile"
  is_root && chown postgres:postgres "$pwfile"
  if ! as_pg "$PG_BIN/initdb" -D "$DATA" -U "$ADMIN_USER" --pwfile="$pwfile" \
      --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale="$locale" \
      >"$LOGDIR/initdb.log" 2>&1; then
    rm -f "$pwfile"
    cat "$LOGDIR/initdb.log" >&2
    die "initdb failed"
  fi
  rm -f "$pwfile"
  printf "\ninclude_if_exists = 'mosaic.conf'\n" | as_pg tee -a "$DATA/postgresql.conf" >/dev/null
}

admin_psql() {
  PGOPTIONS="-c client_min_messages=warning" \
    "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$RUN" -p "$PORT" -U "$ADMIN_USER" "$@"
}

# Brings a database's vector extension to the installed version when there is
# a path (0.8.x releases change no SQL object); a database made under a later
# build keeps its version when an earlier build is selected.
VECTOR_UPDATE_SQL="SELECT 'ALTER EXTENSION vector UPDATE'
FROM pg_extension e JOIN pg_available_extensions a ON a.name = e.extname
WHERE e.extname = 'vector' AND e.extversion <> a.default_version
  AND EXISTS (SELECT 1 FROM pg_extension_update_paths('vector') p
              WHERE p.source = e.extversion AND p.target = a.default_version AND p.path IS NOT NULL)
\\gexec"

# pg_trgm's word-similarity cost and estimate (migrations 0007 and 0020)
# in every database of the cluster that has the extension: template1 (so
# every database made from it has them), the project's database, and those
# made before (bench and evaluation catalogs). Only the extension's owner,
# this cluster's administrator, may set them.
trigram_planning_everywhere() {
  local db
  for db in $(admin_psql -d postgres -Atc "SELECT datname FROM pg_database WHERE datallowconn"); do
    admin_psql -d "$db" -q >/dev/null <<'SQL' || log "note: could not set pg_trgm's planning in $db"
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
    ALTER FUNCTION word_similarity_op(text, text) COST 100;
    ALTER FUNCTION word_similarity_commutator_op(text, text) COST 100;
    ALTER OPERATOR <% (text, text) SET (RESTRICT = contsel);
    ALTER OPERATOR %> (text, text) SET (RESTRICT = contsel);
  END IF;
END
$$;
SQL
  done
}

bootstrap_sql() {
  admin_psql -d postgres -At <<SQL
DO \$\$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$OWNER_USER') THEN
    CREATE ROLE $OWNER_USER;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$RUNTIME_USER') THEN
    CREATE ROLE $RUNTIME_USER;
  END IF;
END
\$\$;
ALTER ROLE $OWNER_USER LOGIN CREATEDB NOSUPERUSER NOCREATEROLE PASSWORD '$OWNER_PASS';
ALTER ROLE $RUNTIME_USER LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '$RUNTIME_PASS';
-- The owner may end the runtime role's sessions: the tests drop their databases
-- WITH (FORCE) while a service pool may still hold connections to them.
GRANT $RUNTIME_USER TO $OWNER_USER;
\\c template1
CREATE EXTENSION IF NOT EXISTS vector;
$VECTOR_UPDATE_SQL
CREATE EXTENSION IF NOT EXISTS pg_trgm;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
SELECT 'CREATE DATABASE $DB OWNER $OWNER_USER' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = '$DB')
\\gexec
\\c $DB
CREATE EXTENSION IF NOT EXISTS vector;
$VECTOR_UPDATE_SQL
CREATE EXTENSION IF NOT EXISTS pg_trgm;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
SELECT 'pgvector ' || (SELECT default_version FROM pg_available_extensions WHERE name = 'vector')
    || ', pg_trgm ' || (SELECT extversion FROM pg_extension WHERE extname = 'pg_trgm');
SQL
}

cmd_start() {
  cmd_install
  prepare_base
  if [ ! -f "$DATA/PG_VERSION" ]; then
    init_cluster
  fi
  ensure_tls

  local conf_new conf_old=""
  conf_new="$(mosaic_conf)"
  [ -f "$DATA/mosaic.conf" ] && conf_old="$(cat "$DATA/mosaic.conf")"

  if pg_running; then
    if [ "$conf_new" != "$conf_old" ]; then
      printf '%s\n' "$conf_new" | as_pg tee "$DATA/mosaic.conf" >/dev/null
      admin_psql -d postgres -c "SELECT pg_reload_conf()" >/dev/null
      if [ "$(admin_psql -d postgres -Atc "SELECT count(*) FROM pg_settings WHERE pending_restart")" != 0 ]; then
        log "note: configuration changed (e.g. MOSAIC_PG_PORT); run 'scripts/db.sh stop && scripts/db.sh start' to apply"
      fi
    fi
  else
    if [ "$conf_new" != "$conf_old" ]; then
      printf '%s\n' "$conf_new" | as_pg tee "$DATA/mosaic.conf" >/dev/null
    fi
    log "starting PostgreSQL $PG_MAJOR ($DATA, port $PORT)"
    if ! as_pg "$PG_BIN/pg_ctl" start -D "$DATA" -w -t 60 -l "$LOGDIR/postgres.log" >/dev/null 2>&1; then
      tail -n 30 "$LOGDIR/postgres.log" >&2 || true
      die "pg_ctl start failed (log: $LOGDIR/postgres.log)"
    fi
  fi

  local versions
  versions="$(bootstrap_sql | tail -n1)" || die "bootstrap SQL failed"
  trigram_planning_everywhere
  echo "mosaic db: running on $HOST:$PORT ($versions)"
}

# ---------------------------------------------------------------------------------------------
# other subcommands
# ---------------------------------------------------------------------------------------------
# Stops the cluster in $DATA (no error when it is not running); $1 names it in
# the messages ("" for the primary).
stop_cluster() {
  if pg_running; then
    log "stopping ${1:-PostgreSQL} ($DATA)"
    as_pg "$PG_BIN/pg_ctl" stop -D "$DATA" -m fast -w -t 60 >/dev/null
    echo "mosaic db: ${1:+$1 }stopped"
  else
    echo "mosaic db: ${1:+$1 }not running"
  fi
}

cmd_stop() {
  (use_replica && replica_stop) || true
  resolve_existing
  stop_cluster ""
}

cmd_status() {
  resolve_existing
  local running=1
  if [ -f "$DATA/PG_VERSION" ] || [ -d "$DATA" ]; then
    if [ -r "$DATA" ] || is_root; then
      pg_running && running=0
    elif [ -x "$PG_BIN/pg_isready" ]; then
      "$PG_BIN/pg_isready" -q -h "$HOST" -p "$PORT" && running=0
    fi
  fi
  if [ "$running" -eq 0 ]; then
    echo "mosaic db: running on $HOST:$PORT ($DATA)"
    return 0
  fi
  echo "mosaic db: stopped (port $PORT)"
  return 3
}

cmd_url() {
  local who="${1:-owner}"
  case "$who" in
    owner)   echo "postgres://$OWNER_USER:$OWNER_PASS@$HOST:$PORT/$DB" ;;
    runtime) echo "postgres://$RUNTIME_USER:$RUNTIME_PASS@$HOST:$PORT/$DB" ;;
    admin)   echo "postgres://$ADMIN_USER:$ADMIN_PASS@$HOST:$PORT/$DB" ;;
    *) die "unknown url kind '$who' (expected owner|runtime|admin)" ;;
  esac
}

cmd_psql() {
  resolve_existing
  if [ -w "$RUN" ] && [ -S "$RUN/.s.PGSQL.$PORT" ]; then
    exec "$PG_BIN/psql" -h "$RUN" -p "$PORT" -U "$ADMIN_USER" -d "$DB" "$@"
  fi
  PGPASSWORD="$ADMIN_PASS" exec "$PG_BIN/psql" -h "$HOST" -p "$PORT" -U "$ADMIN_USER" -d "$DB" "$@"
}

# shellcheck source=scripts/db-replica.sh
. "$SCRIPT_DIR/db-replica.sh"

usage() {
  echo "usage: $0 install|start|stop|status|url [owner|runtime|admin]|ensure|psql [args]" >&2
  echo "       $0 replica start|stop|status|url [owner|runtime|admin]" >&2
  exit 2
}

main() {
  [ $# -ge 1 ] || usage
  local cmd="$1"; shift
  case "$cmd" in
    install) cmd_install; echo "mosaic db: install OK (PostgreSQL $PG_MAJOR, pgvector $(vector_version))" ;;
    start|ensure) cmd_start ;;
    stop)    cmd_stop ;;
    status)  cmd_status ;;
    url)     cmd_url "$@" ;;
    psql)    cmd_psql "$@" ;;
    replica) cmd_replica "$@" ;;
    -h|--help|help) usage ;;
    *) usage ;;
  esac
}

main "$@"
