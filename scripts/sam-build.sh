#!/usr/bin/env bash
# Builds the Lambda functions of template.yaml (the four operations and the
# AgentCore identity interceptor) with `sam build`
# (BuildMethod rust-cargolambda) for x86_64, into .aws-sam/build/<LogicalId>/bootstrap.
#
# Installs what it needs on first use, into the same private virtual
# environment as scripts/check-template.sh: aws-sam-cli, cargo-lambda and
# ziglang from PyPI, at the versions scripts/venv.sh pins (cargo-lambda's
# wheel ships the binary; Zig is the toolchain it links with by default).
#
# The Rust artefacts go to $CARGO_TARGET_DIR (default ~/.cache/mosaic/target,
# as in the Makefile), under x86_64-unknown-linux-gnu/release and lambda/, so a
# second run only relinks what changed.
#
# Environment:
#   MOSAIC_TOOLS_VENV       the virtual environment (default ~/.cache/mosaic/venv-aws)
#   CARGO_TARGET_DIR        the cargo target directory (default ~/.cache/mosaic/target)
#   CARGO_LAMBDA_COMPILER   cargo-lambda's linker backend: unset = cargo-zigbuild
#                           (glibc floor independent of this host), or `cargo`
#                           (the host's cc/ld: glibc of the build machine)
#   SAM_BUILD_MODE=debug    debug build instead of --release (SAM's own switch)
# Extra arguments are passed to `sam build` (e.g. a logical id to build only that
# function: SAM then empties .aws-sam/build of the others).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh

VENV="${MOSAIC_TOOLS_VENV:-$HOME/.cache/mosaic/venv-aws}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mosaic/target}"
ARCH=x86_64
RUST_TARGET=x86_64-unknown-linux-gnu
FUNCTIONS=(SearchProductsFunction GetProductEvidenceFunction CompareProductsFunction ExplainRetrievalFunction
           IdentityInterceptorFunction)

say() { echo "sam-build: $*" >&2; }
die() { echo "sam-build: error: $*" >&2; exit 1; }

# --- prerequisites -----------------------------------------------------------
command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust (https://rustup.rs) and retry"

if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed 2>/dev/null | grep -qx "$RUST_TARGET"; then
  say "adding the Rust target $RUST_TARGET"
  rustup target add "$RUST_TARGET" >&2
fi

# --- tools in the virtual environment (idempotent) ---------------------------
ensure_aws_tools "$VENV"
# SAM's Rust workflow (aws-lambda-builders >= 1.67) must resolve the cargo
# target directory through `cargo metadata` (honouring CARGO_TARGET_DIR) to find
# the binaries of a workspace; older releases look in ./target/lambda only.
"$VENV/bin/python" - <<'EOF' 2>/dev/null ||
from aws_lambda_builders.workflows.rust_cargo.cargo_lambda import SubprocessCargoLambda
raise SystemExit(0 if hasattr(SubprocessCargoLambda, "resolve_workspace_layout") else 1)
EOF
  die "aws-lambda-builders in $VENV lacks Cargo workspace support (need >= 1.67)"

# SAM looks cargo-lambda up on PATH; cargo-zigbuild runs `python3 -m ziglang`,
# which must be the virtual environment's python.
export PATH="$VENV/bin:$PATH"
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export SAM_CLI_TELEMETRY=0

# rust-cargolambda needed the beta opt-in until aws-sam-cli graduated it (Dec 2025,
# 1.170 needs none); this variable is that opt-in for one feature, where --beta-features
# would switch on every beta feature. Newer releases ignore it.
export SAM_CLI_BETA_RUST_CARGO_LAMBDA=1

say "$(sam --version), cargo-lambda $(cargo-lambda lambda --version | awk '{print $2}'), $(cargo --version | awk '{print $1, $2}')"
say "compiler: ${CARGO_LAMBDA_COMPILER:-cargo-zigbuild (default)}; target dir: $CARGO_TARGET_DIR"
say "building ${FUNCTIONS[*]} for $ARCH${SAM_BUILD_MODE:+ (SAM_BUILD_MODE=$SAM_BUILD_MODE)}"

start=$(date +%s)
# (--parameter-overrides last: it takes every word that follows it)
if ! sam build "$@" --template-file template.yaml --parameter-overrides "Architecture=$ARCH"; then
  die "sam build failed (run with --debug for cargo-lambda's command lines)"
fi

# --- check the artefacts -----------------------------------------------------
status=0
for fn in "${FUNCTIONS[@]}"; do
  # With a logical id among the arguments, SAM builds that function only.
  if [ "$#" -gt 0 ] && [[ " ${FUNCTIONS[*]} " == *" ${1:-} "* ]] && [[ " $* " != *" $fn "* ]]; then
    continue
  fi
  bin=".aws-sam/build/$fn/bootstrap"
  if [ ! -x "$bin" ]; then
    say "missing $bin"; status=1; continue
  fi
  desc=$(file -b "$bin" 2>/dev/null || true)
  if [ -n "$desc" ] && [[ "$desc" != *"x86-64"* ]]; then
    say "$bin is not an x86-64 executable: $desc"; status=1; continue
  fi
  say "$(printf '%-28s %6s KiB' "$fn" "$(( $(stat -c %s "$bin") / 1024 ))")"
done
[ "$status" = 0 ] || die "some bootstraps are missing or wrong"
say "done in $(( $(date +%s) - start ))s: .aws-sam/build/<LogicalId>/bootstrap"
