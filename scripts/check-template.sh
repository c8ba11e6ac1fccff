#!/usr/bin/env bash
# Lints the SAM template offline: cfn-lint and `sam validate --lint`, both
# installed from PyPI into a private virtual environment on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${MOSAIC_TOOLS_VENV:-$HOME/.cache/mosaic/venv-aws}"
if [ ! -x "$VENV/bin/sam" ] || [ ! -x "$VENV/bin/cfn-lint" ]; then
  echo "check-template: installing cfn-lint and aws-sam-cli into $VENV" >&2
  if ! python3 -m venv "$VENV" 2>/dev/null; then
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
    else
      echo "check-template: python3 -m venv failed; install python3-venv (sudo apt-get install python3-venv)" >&2
      exit 1
    fi
    python3 -m venv "$VENV"
  fi
  "$VENV/bin/pip" install --quiet --disable-pip-version-check cfn-lint aws-sam-cli
fi
"$VENV/bin/cfn-lint" template.yaml
# sam validate needs a region but no credentials for --lint.
AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}" "$VENV/bin/sam" validate --lint --template template.yaml
echo "check-template: template.yaml passes cfn-lint and sam validate --lint"
