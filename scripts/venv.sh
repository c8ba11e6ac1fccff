# Sourced by the scripts that need Python tools (the model fetch, the
# template lint, the Lambda build, the MCP test client): each keeps its tools
# in a private virtual environment, so nothing is installed into the
# system's Python and pip comes from the virtual environment itself.
#
# ensure_venv DIR: creates the virtual environment DIR unless it exists.
# Where python3 or its venv module is missing (a minimal Debian has
# neither), installs python3 and python3-venv with apt-get, as root or
# through sudo; otherwise stops with the command to run.

venv_say() { echo "venv: $*" >&2; }

venv_apt_install() {
  local sudo=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo)
    else
      venv_say "python3 with its venv module is needed; install it with:"
      venv_say "  apt-get update && apt-get install -y --no-install-recommends python3 python3-venv"
      exit 1
    fi
  fi
  venv_say "installing python3 and python3-venv (apt-get)"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    python3 python3-venv >&2
}

ensure_venv() {
  local dir="$1"
  [ -x "$dir/bin/python" ] && [ -x "$dir/bin/pip" ] && return 0
  if ! command -v python3 >/dev/null 2>&1; then
    venv_apt_install
  fi
  venv_say "creating the virtual environment $dir"
  rm -rf "$dir"
  if ! python3 -m venv "$dir" 2>/dev/null; then
    venv_apt_install
    rm -rf "$dir"
    python3 -m venv "$dir"
  fi
}

# The tools of the template lint and the Lambda build (one virtual
# environment, ~/.cache/mosaic/venv-aws): pinned, so that two fresh machines
# lint and build with the same releases. A new release is one line here.
AWS_TOOLS=(
  aws-sam-cli==1.170.0
  aws-lambda-builders==1.67.0
  cfn-lint==1.58.0
  cargo-lambda==1.9.2
  ziglang==0.17.1
)

# venv_has DIR NAME==VERSION...: whether the virtual environment DIR holds
# every one of these packages at exactly that version.
venv_has() {
  local dir="$1"
  shift
  [ -x "$dir/bin/python" ] || return 1
  "$dir/bin/python" - "$@" <<'PY' 2>/dev/null
import importlib.metadata as m, sys
for spec in sys.argv[1:]:
    name, version = spec.split("==")
    try:
        if m.version(name) != version:
            sys.exit(1)
    except m.PackageNotFoundError:
        sys.exit(1)
PY
}

# ensure_aws_tools DIR: the pinned AWS_TOOLS in the virtual environment DIR.
ensure_aws_tools() {
  local dir="$1"
  venv_has "$dir" "${AWS_TOOLS[@]}" && return 0
  ensure_venv "$dir"
  venv_say "installing ${AWS_TOOLS[*]} into $dir"
  "$dir/bin/pip" install --quiet --disable-pip-version-check "${AWS_TOOLS[@]}"
}
