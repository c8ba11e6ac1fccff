# Mosaic Hybrid Retrieval — the two set-up commands are `make demo` and
# `make test`; everything they need is installed and started on the way.

SHELL := /bin/bash
export CARGO_TARGET_DIR ?= $(HOME)/.cache/mosaic/target
MOSAIC := $(CARGO_TARGET_DIR)/debug/mosaic
PRODUCTS ?= 5000

# The local cluster's port (scripts/db.sh); every connection string follows it.
export MOSAIC_PG_PORT ?= 54329
export MOSAIC_DATABASE_URL ?= postgres://mosaic_owner:mosaic_owner@127.0.0.1:$(MOSAIC_PG_PORT)/mosaic
export MOSAIC_RUNTIME_DATABASE_URL ?= postgres://mosaic_runtime:mosaic_runtime@127.0.0.1:$(MOSAIC_PG_PORT)/mosaic
export MOSAIC_TEST_SERVER ?= postgres://mosaic_owner:mosaic_owner@127.0.0.1:$(MOSAIC_PG_PORT)
export MOSAIC_TEST_RUNTIME_SERVER ?= postgres://mosaic_runtime:mosaic_runtime@127.0.0.1:$(MOSAIC_PG_PORT)
# The local cluster's private test CA (scripts/db.sh), for the TLS tests.
export MOSAIC_TEST_TLS_CA ?= $(CURDIR)/.mosaic/pg/tls/ca.crt
# The streaming replica of the local cluster (scripts/db.sh replica), for the read-pool tests.
export MOSAIC_PG_REPLICA_PORT ?= 54331
export MOSAIC_TEST_REPLICA_SERVER ?= postgres://mosaic_runtime:mosaic_runtime@127.0.0.1:$(MOSAIC_PG_REPLICA_PORT)
export MOSAIC_TEST_REPLICA_ADMIN ?= postgres://mosaic_admin:mosaic_admin@127.0.0.1:$(MOSAIC_PG_REPLICA_PORT)

.PHONY: demo demo-stop test db db-stop replica model build check-template sam-build mcp-client migrate sample embed stats bench fmt lint clean-test-dbs eval help

help:
	@echo "make demo   - local database, sample catalog, embeddings, server, example calls"
	@echo "make test   - everything needed, then every test"
	@echo "make db     - install/start the local PostgreSQL (pgvector, pg_trgm)"
	@echo "make db-stop"
	@echo "make replica - a streaming replica of the local database on MOSAIC_PG_REPLICA_PORT (54331)"
	@echo "make sam-build - the Lambda functions (four operations + identity interceptor) with sam build (cargo-lambda, x86_64) into .aws-sam/build"
	@echo "make eval   - mosaic eval on both evaluation catalogs (generated sample, foreign) into .mosaic/eval/"
	@echo "make bench  - mosaic bench with an optimised build (ARGS=\"--sizes 100000 --no-throughput\" to choose)"

db:
	@bash scripts/db.sh ensure

db-stop:
	@bash scripts/db.sh stop

replica: db
	@bash scripts/db.sh replica start

model:
	@bash scripts/fetch-model.sh

build:
	cargo build -p mosaic-cli

migrate: db build
	$(MOSAIC) migrate

sample: migrate
	$(MOSAIC) load --sample --products $(PRODUCTS) --if-empty

embed: sample model
	$(MOSAIC) embed

stats:
	$(MOSAIC) stats

# Benchmarks need an optimised build; see BENCHMARKS.md for the options.
bench: db
	cargo build --release -p mosaic-cli
	$(CARGO_TARGET_DIR)/release/mosaic bench $(ARGS)

demo:
	@bash scripts/demo.sh

# Retrieval quality on both catalogs; see EVALUATION.md.
eval:
	@bash scripts/eval.sh $(ARGS)

demo-stop:
	@if [ -f .mosaic/serve.pid ]; then kill $$(cat .mosaic/serve.pid) 2>/dev/null || true; rm -f .mosaic/serve.pid; echo "server stopped"; fi

clean-test-dbs: db
	@bash scripts/db.sh psql -qAtc "SELECT 'DROP DATABASE ' || quote_ident(datname) || ' WITH (FORCE);' FROM pg_database WHERE datname LIKE 'mt\_%'" | bash scripts/db.sh psql -q >/dev/null

check-template:
	@bash scripts/check-template.sh

sam-build:
	@bash scripts/sam-build.sh

# The official MCP Python SDK the `mosaic mcp` test drives it with.
mcp-client:
	@bash scripts/mcp-client.sh

# The Lambda emulator tests drive the `bootstrap` files `sam build` made.
test: db model clean-test-dbs replica check-template sam-build mcp-client
	MOSAIC_LAMBDA_BOOTSTRAP_DIR=$(CURDIR)/.aws-sam/build cargo test --workspace --no-fail-fast
	cargo test -p mosaic --features aws --test aws_stubs

fmt:
	cargo fmt --all

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo clippy -p mosaic --features aws,lambda --all-targets -- -D warnings
