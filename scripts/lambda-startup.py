#!/usr/bin/env python3
"""Size and start-up time of the Lambda bootstraps `make sam-build` wrote.

Start-up is the time from starting the bootstrap process to its first
`GET /2018-06-01/runtime/invocation/next` on a local stand-in for the Lambda
Runtime API: the function's whole initialisation (configuration, principal
proof key, context, embedder) before it can take its first event. No event is
ever sent, so nothing is read from or written to the database.

Each bootstrap is started RUNS times (default 15) with the environment the
Runtime API emulator of tests/lambda.rs gives it (hashing embedder, a
principal proof key, anonymous callers allowed); the table shows the size,
the median, the fastest and the slowest start.

Usage: scripts/lambda-startup.py [BUILD_DIR] [RUNS]
  BUILD_DIR   default .aws-sam/build (one <LogicalId>/bootstrap per function)
Environment:
  MOSAIC_RUNTIME_DATABASE_URL   the functions' MOSAIC_DATABASE_URL (the
                                connection is opened in the background; the
                                first poll does not wait for it)
"""

import http.server
import os
import statistics
import subprocess
import sys
import threading
import time

FUNCTIONS = [
    ("SearchProductsFunction", "search-products"),
    ("GetProductEvidenceFunction", "get-product-evidence"),
    ("CompareProductsFunction", "compare-products"),
    ("ExplainRetrievalFunction", "explain-retrieval"),
    ("IdentityInterceptorFunction", "identity-interceptor"),
]
NEXT = "/2018-06-01/runtime/invocation/next"
INIT_ERROR = "/2018-06-01/runtime/init/error"
TIMEOUT_S = 20.0


class RuntimeApi(http.server.ThreadingHTTPServer):
    """Records when the first `/next` poll (or an init error) arrives and
    holds the poll open until the process is stopped."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.polled = threading.Event()
        self.stop = threading.Event()
        self.at = None
        self.init_error = None


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == NEXT and self.server.at is None:
            self.server.at = time.perf_counter()
            self.server.polled.set()
        self.server.stop.wait(TIMEOUT_S)

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length).decode(errors="replace")
        if self.path == INIT_ERROR:
            self.server.init_error = body
            self.server.polled.set()
        self.send_response(202)
        self.send_header("content-length", "0")
        self.end_headers()


def start_once(name, path):
    api = RuntimeApi()
    threading.Thread(target=api.serve_forever, daemon=True).start()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:%d" % api.server_address[1],
        "AWS_LAMBDA_FUNCTION_NAME": name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_STREAM_NAME": "2026/12/01/[$LATEST]0123456789abcdef0123456789abcdef",
        "AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/" + name,
        "AWS_REGION": "us-east-1",
        "MOSAIC_DATABASE_URL": os.environ.get("MOSAIC_RUNTIME_DATABASE_URL", ""),
        "MOSAIC_EMBEDDER": "hashing",
        "MOSAIC_ALLOW_ANONYMOUS": "true",
        "MOSAIC_PRINCIPAL_PROOF_KEY": "mosaic-lambda-startup-principal-proof-key-01",
        "MOSAIC_JWT_ISSUER": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Mosaic0Ex",
        "RUST_LOG": "warn",
    }
    started = time.perf_counter()
    proc = subprocess.Popen(
        [path], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        if not api.polled.wait(TIMEOUT_S):
            raise SystemExit("%s: no /next poll within %.0f s" % (name, TIMEOUT_S))
        if api.init_error is not None:
            raise SystemExit("%s: init error: %s" % (name, api.init_error))
        return (api.at - started) * 1000.0
    finally:
        proc.kill()
        proc.wait()
        api.stop.set()
        api.shutdown()
        api.server_close()


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else ".aws-sam/build"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    print("| function | bootstrap size | start to first `/next` poll: median (min–max), %d starts |" % runs)
    print("|---|---:|---:|")
    for logical_id, name in FUNCTIONS:
        path = os.path.join(build, logical_id, "bootstrap")
        if not os.access(path, os.X_OK):
            raise SystemExit("%s is missing: run `make sam-build`" % path)
        size = os.stat(path).st_size
        times = sorted(start_once(name, path) for _ in range(runs))
        print(
            "| %s | %s B (%.2f MiB) | %.1f ms (%.1f–%.1f) |"
            % (name, format(size, ",").replace(",", " "), size / 1048576.0,
               statistics.median(times), times[0], times[-1])
        )


if __name__ == "__main__":
    main()
