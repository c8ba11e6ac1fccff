#!/usr/bin/env bash
# Lints the SAM template offline: cfn-lint and `sam validate --lint`, both
# installed from PyPI (pinned, scripts/venv.sh) into a private virtual
# environment on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
VENV="${MOSAIC_TOOLS_VENV:-$HOME/.cache/mosaic/venv-aws}"
ensure_aws_tools "$VENV"
"$VENV/bin/cfn-lint" template.yaml
# sam validate needs a region but no credentials for --lint.
AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}" "$VENV/bin/sam" validate --lint --template template.yaml
echo "check-template: template.yaml passes cfn-lint and sam validate --lint"
