#!/usr/bin/env bash
# `make eval`: retrieval quality on both evaluation catalogs, from one build.
#
#  1. the generated sample catalog, 5,000 products, in a database of its own
#     (`mosaic_sample`: the demo's database, or a catalog a user imported,
#     is never touched), with its judged set eval/sample-queries.jsonl;
#  2. the foreign catalog in eval/foreign/ (written by others), imported as
#     it is into a database of its own (`mosaic_foreign`), embedded, and
#     evaluated with eval/foreign/queries.jsonl.
#
# Each step is skipped when already done (catalog present, embeddings
# current). Reports go to .mosaic/eval/{sample,foreign}.{txt,json}.
#
# Before measuring, each catalog's projection is rewritten in product-id
# order (CLUSTER, a few seconds at 5,000 products). The arms' scan budgets
# take matches in the table's physical order, which a load and its
# embedding updates leave different on every fresh database: without this,
# two fresh imports of the same catalog measured foreign serving nDCG@10
# 0.628 and 0.634. With it, every machine measures the same numbers.
# Extra arguments are passed to both `mosaic eval` runs.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mosaic/target}"
MOSAIC="$CARGO_TARGET_DIR/debug/mosaic"
OUT=.mosaic/eval
FOREIGN_DB="${MOSAIC_FOREIGN_DB:-mosaic_foreign}"
SAMPLE_DB="${MOSAIC_SAMPLE_DB:-mosaic_sample}"
mkdir -p "$OUT"

step() { printf '\n\033[1m== %s\033[0m\n' "$*" >&2; }

step "local database, model, build"
bash scripts/db.sh ensure >&2
bash scripts/fetch-model.sh >&2
cargo build -p mosaic-cli >&2

owner_url="${MOSAIC_DATABASE_URL:-$(bash scripts/db.sh url owner)}"
runtime_url="${MOSAIC_RUNTIME_DATABASE_URL:-$(bash scripts/db.sh url runtime)}"

# The projection in product-id order, statistics fresh (see above). Local
# cluster only, like the foreign database's creation below.
canonical_layout() {
  bash scripts/db.sh psql -d "$1" -qc \
    "CLUSTER search.product_projection USING product_projection_pkey; ANALYZE search.product_projection" >&2
}

# A database of the local cluster, created when missing.
ensure_database() {
  if [ -z "$(bash scripts/db.sh psql -d postgres -Atc "SELECT 1 FROM pg_database WHERE datname = '$1'")" ]; then
    bash scripts/db.sh psql -d postgres -qc "CREATE DATABASE $1 OWNER mosaic_owner" >&2
  fi
}

products_in() {
  MOSAIC_DATABASE_URL="$1" "$MOSAIC" stats --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["products"])' 2>/dev/null || echo 0
}

step "sample catalog (database $SAMPLE_DB)"
ensure_database "$SAMPLE_DB"
s_owner="${owner_url%/*}/$SAMPLE_DB"
s_runtime="${runtime_url%/*}/$SAMPLE_DB"
MOSAIC_DATABASE_URL="$s_owner" "$MOSAIC" migrate >&2
# The sample queries were judged on the 5,000-product sample catalog.
if [ "$(products_in "$s_owner")" != "5000" ]; then
  MOSAIC_DATABASE_URL="$s_owner" "$MOSAIC" load --sample --products 5000 >&2
fi
MOSAIC_DATABASE_URL="$s_owner" "$MOSAIC" embed >&2
canonical_layout "$SAMPLE_DB"

step "foreign catalog (database $FOREIGN_DB)"
ensure_database "$FOREIGN_DB"
f_owner="${owner_url%/*}/$FOREIGN_DB"
f_runtime="${runtime_url%/*}/$FOREIGN_DB"
MOSAIC_DATABASE_URL="$f_owner" "$MOSAIC" migrate >&2
if [ "$(products_in "$f_owner")" = "0" ]; then
  MOSAIC_DATABASE_URL="$f_owner" "$MOSAIC" load \
    --products eval/foreign/products.jsonl.gz --evidence eval/foreign/evidence.jsonl.gz >&2
fi
MOSAIC_DATABASE_URL="$f_owner" "$MOSAIC" embed >&2
canonical_layout "$FOREIGN_DB"

step "mosaic eval: sample catalog"
MOSAIC_RUNTIME_DATABASE_URL="$s_runtime" "$MOSAIC" eval \
  --queries eval/sample-queries.jsonl --json "$OUT/sample.json" "$@" | tee "$OUT/sample.txt"
step "mosaic eval: foreign catalog"
MOSAIC_RUNTIME_DATABASE_URL="$f_runtime" "$MOSAIC" eval \
  --queries eval/foreign/queries.jsonl --json "$OUT/foreign.json" "$@" | tee "$OUT/foreign.txt"
echo "reports: $OUT/{sample,foreign}.{txt,json}" >&2
