#!/usr/bin/env bash
# The local demo: everything `make demo` needs, then the product at work.
#
#  1. the local PostgreSQL (installed and started by scripts/db.sh),
#  2. the embedding model (scripts/fetch-model.sh),
#  3. migrations, the sample catalog and its embeddings (skipped when present),
#  4. `mosaic serve` in the background (same handler code as the Lambdas),
#  5. three searches, one evidence call and one explain call, over HTTP.
#
# The server keeps running afterwards; `make demo-stop` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mosaic/target}"
MOSAIC="$CARGO_TARGET_DIR/debug/mosaic"
ADDR="${MOSAIC_ADDR:-127.0.0.1:8787}"
URL="http://$ADDR"
STATE=.mosaic
mkdir -p "$STATE"
export MOSAIC_DATABASE_URL="${MOSAIC_DATABASE_URL:-$(bash scripts/db.sh url owner)}"
export MOSAIC_RUNTIME_DATABASE_URL="${MOSAIC_RUNTIME_DATABASE_URL:-$(bash scripts/db.sh url runtime)}"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "local database"
bash scripts/db.sh ensure
step "embedding model"
bash scripts/fetch-model.sh
step "build"
cargo build -p mosaic-cli
step "schema, sample catalog, embeddings"
"$MOSAIC" migrate
"$MOSAIC" load --sample --products "${PRODUCTS:-5000}" --if-empty
"$MOSAIC" embed
"$MOSAIC" stats

step "server"
if [ -f "$STATE/serve.pid" ] && kill -0 "$(cat "$STATE/serve.pid")" 2>/dev/null; then
  echo "restarting the running server (pid $(cat "$STATE/serve.pid"))"
  kill "$(cat "$STATE/serve.pid")" && sleep 1
fi
MOSAIC_LOG=info nohup "$MOSAIC" serve --addr "$ADDR" >"$STATE/serve.log" 2>&1 &
SERVER_PID=$!
echo "$SERVER_PID" >"$STATE/serve.pid"
# The server log's last lines, without a backtrace's frames.
log_tail() { sed '/^Stack backtrace:/,$d' "$STATE/serve.log" | tail -n 20 >&2; }
# Ready when it answers a search; a server that exits (a port in use, a
# database it refuses) or stays silent stops the demo with its log.
ready=
for _ in $(seq 1 100); do
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "mosaic serve exited; the end of $STATE/serve.log:" >&2
    log_tail
    exit 1
  fi
  if "$MOSAIC" search --server "$URL" --filter category_key=kettles --limit 1 >/dev/null 2>&1; then
    ready=1
    break
  fi
  sleep 0.2
done
if [ -z "$ready" ]; then
  echo "mosaic serve did not answer on $URL within 20 s; the end of $STATE/serve.log:" >&2
  log_tail
  exit 1
fi
echo "mosaic serve is running on $URL (pid $(cat "$STATE/serve.pid"), log $STATE/serve.log)"
# One unprinted search first: right after a (re)start the database reads the
# vector index from disk and the model's first call allocates its buffers.
"$MOSAIC" search --server "$URL" "warm up" --limit 1 >/dev/null 2>&1 || true

# Pick real identifiers from the catalog so the demo works for any seed.
read -r MODEL BRAND <<<"$(bash scripts/db.sh psql -Atc \
  "SELECT model || ' ' || split_part(brand, ' ', 1) FROM catalog.products WHERE category_key = 'headphones' ORDER BY product_id LIMIT 1" | tr -d '\r')"
# A typo: the brand with two letters swapped, plus a category word.
TYPO="$(python3 -c "import sys; b=sys.argv[1].lower(); print(b[:2]+b[3]+b[2]+b[4:]+' headphnes')" "$BRAND" 2>/dev/null || echo "$BRAND headphnes")"

step "search 1: an exact model number ($MODEL)"
"$MOSAIC" search --server "$URL" "$MODEL" --limit 5 --authorized-limit 3 | tee "$STATE/demo-search1.txt"
step "search 2: a typo (\"$TYPO\")"
"$MOSAIC" search --server "$URL" "$TYPO" --limit 5
step "search 3: a descriptive need under \$30 (\"something to keep drinks cold on a long hike\")"
"$MOSAIC" search --server "$URL" "something to keep drinks cold on a long hike" \
  --filter max_price_cents=3000 --filter in_stock_only=true --limit 5

EVENT="$(awk 'NR==1 {print $2}' "$STATE/demo-search1.txt")"
PRODUCT="$(bash scripts/db.sh psql -Atc "SELECT product_id FROM catalog.products WHERE model = '$MODEL'" | tr -d '\r')"
step "evidence for the first result of search 1"
"$MOSAIC" evidence --server "$URL" "$EVENT" "$PRODUCT" "what do owners say about comfort and battery life?" --limit 3
step "explain search 1 (the whole pool; grants nothing)"
"$MOSAIC" explain --server "$URL" "$EVENT" --rows 10

step "try it yourself"
cat <<TXT
  curl -s -X POST $URL/api/search -H 'content-type: application/json' \\
       -d '{"query": "noise cancelling headphones for flights", "limit": 5, "filters": {"max_price_cents": 20000}}'
  curl -s $URL/api/retrieval/events/$EVENT
  curl -s -X POST $URL/api/products/$PRODUCT/evidence -H 'content-type: application/json' \\
       -d '{"retrieval_scope_id": "$EVENT", "evidence_query": "how long does the battery last?"}'
  $MOSAIC search "quiet mechanical keyboard" --filter in_stock_only=true
  make demo-stop    # stops the server
TXT
