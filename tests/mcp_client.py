"""Drives `mosaic mcp` with the official MCP Python SDK (the `mcp` package).

    python tests/mcp_client.py [--query TEXT] stdio COMMAND [ARG...]
    python tests/mcp_client.py [--query TEXT] http URL
    python tests/mcp_client.py --record ...   (a readable transcript instead)
    python tests/mcp_client.py --explain SCOPE ...   (one explain_retrieval call)

One session: initialize, list the tools, search (limit 5, authorized_limit
2), evidence for a granted product, evidence for an ungranted one, compare
the granted ones, explain the search, then two calls that must fail: an
out-of-range argument and evidence under a retrieval scope that does not
exist. Prints one JSON document on stdout: the server's identity, the tool
list as received, and every call with its arguments, `isError`, structured
content and text. The integration test (tests/mcp.rs) asserts on it.
With --explain, the session is initialize and one explain_retrieval call
on the given retrieval scope (another process's search, say). Each
--server-env NAME=VALUE is added to the stdio server's environment (the SDK
passes it only a safe few of the client's variables).
"""

import argparse
import asyncio
import json
import sys
import uuid

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client
from mcp.client.streamable_http import streamable_http_client


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


async def session(read, write, query, transport, explain=None):
    out = {"transport": transport, "calls": []}
    async with ClientSession(read, write) as s:
        init = await s.initialize()
        out["protocol_version"] = init.protocol_version
        out["server_info"] = dump(init.server_info)
        out["capabilities"] = dump(init.capabilities)
        out["instructions"] = init.instructions
        tools = await s.list_tools()
        out["tools"] = [dump(t) for t in tools.tools]

        async def call(name, arguments):
            # The SDK validates a successful result's structured content
            # against the tool's output schema; a mismatch raises.
            r = await s.call_tool(name, arguments)
            entry = {
                "tool": name,
                "arguments": arguments,
                "is_error": bool(r.is_error),
                "structured": r.structured_content,
                "text": text_of(r),
            }
            out["calls"].append(entry)
            return entry

        if explain is not None:
            await call("explain_retrieval", {"retrieval_scope_id": explain})
            return out

        search = await call(
            "search_products", {"query": query, "limit": 5, "authorized_limit": 2}
        )
        results = (search["structured"] or {}).get("results", [])
        scope = (search["structured"] or {}).get("search_event_id")
        granted = [r["product_id"] for r in results if r["granted"]]
        ungranted = [r["product_id"] for r in results if not r["granted"]]
        if not scope or len(granted) < 2 or not ungranted:
            raise SystemExit(f"the search did not serve 2 granted and 1 ungranted results: {search}")
        await call(
            "get_product_evidence",
            {
                "retrieval_scope_id": scope,
                "product_id": granted[0],
                "evidence_query": "what do owners say about battery life?",
                "limit": 3,
            },
        )
        await call(
            "get_product_evidence",
            {
                "retrieval_scope_id": scope,
                "product_id": ungranted[0],
                "evidence_query": "what do owners say about battery life?",
            },
        )
        await call("compare_products", {"retrieval_scope_id": scope, "product_ids": granted[:2]})
        await call("explain_retrieval", {"retrieval_scope_id": scope})
        await call("search_products", {"query": query, "limit": 500})
        await call(
            "get_product_evidence",
            {
                "retrieval_scope_id": str(uuid.uuid4()),
                "product_id": granted[0],
                "evidence_query": "battery",
            },
        )
    return out


def record(out):
    """The session as an agent sees it: each call and its text content."""
    lines = [
        f"initialize -> {out['server_info'].get('name')} {out['server_info'].get('version')}, "
        f"protocol {out['protocol_version']}",
        "tools/list -> " + ", ".join(t["name"] for t in out["tools"]),
    ]
    for c in out["calls"][:5]:
        lines.append("")
        lines.append(f"tools/call {c['tool']} {json.dumps(c['arguments'])}")
        lines.append(f"<- isError: {str(c['is_error']).lower()}")
        lines.extend("   " + line for line in c["text"].rstrip("\n").split("\n"))
    return "\n".join(lines) + "\n"


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--query", default="wireless headphones")
    p.add_argument("--record", action="store_true")
    p.add_argument("--explain", metavar="SCOPE")
    p.add_argument("--server-env", metavar="NAME=VALUE", action="append", default=[],
                   help="a variable for the stdio server's environment (repeatable)")
    p.add_argument("transport", choices=["stdio", "http"])
    p.add_argument("target", nargs=argparse.REMAINDER)
    a = p.parse_args()
    if not a.target:
        p.error("stdio needs the server command, http the endpoint URL")
    if a.transport == "stdio":
        env = get_default_environment()
        env.update(v.split("=", 1) for v in a.server_env)
        params = StdioServerParameters(command=a.target[0], args=a.target[1:], env=env)
        async with stdio_client(params) as (read, write):
            out = await session(read, write, a.query, "stdio", a.explain)
    else:
        async with streamable_http_client(a.target[0]) as (read, write):
            out = await session(read, write, a.query, "http", a.explain)
    sys.stdout.write(record(out) if a.record else json.dumps(out) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
