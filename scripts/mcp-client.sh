#!/usr/bin/env bash
# Installs the official MCP Python SDK (PyPI package `mcp`, pinned) into a
# private virtual environment, once; the MCP integration test (tests/mcp.rs)
# drives `mosaic mcp` with it. Prints nothing when it is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
VENV="${MOSAIC_MCP_VENV:-$HOME/.cache/mosaic/venv-mcp}"
MCP_VERSION=2.3.0
if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_VERSION')" 2>/dev/null; then
  echo "mcp-client: installing mcp==$MCP_VERSION into $VENV" >&2
  ensure_venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "mcp==$MCP_VERSION"
fi
