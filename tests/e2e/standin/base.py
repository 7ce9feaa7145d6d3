"""The HTTP side shared by every scripted stand-in of a model API.

A stand-in listens on 127.0.0.1 only (the agents run in a network namespace where loopback is
all there is), answers each request from a scenario script, and logs one line per request to
stderr so that a failing run shows what the agent asked for. Standard library only.
"""

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Request:
    """One request as the scenario sees it."""

    def __init__(self, method, path, headers, body):
        self.method = method
        self.path = path
        self.headers = headers
        self.raw = body
        try:
            self.json = json.loads(body) if body else None
        except ValueError:
            self.json = None


class Reply:
    """What to send back: a JSON body, or a list of server-sent events; `delay` seconds
    before answering (a slow model: other requests are served meanwhile)."""

    def __init__(self, status=200, body=None, events=None, headers=None, delay=0):
        self.status = status
        self.body = body
        self.events = events
        self.headers = headers or {}
        self.delay = delay

    @staticmethod
    def json(obj, status=200):
        return Reply(status=status, body=obj)

    @staticmethod
    def sse(events):
        """`events`: a list of (event name or None, data) pairs; data is JSON-encoded unless
        it is already a string."""
        return Reply(events=events)


def serve(handle, port_file, log_name="stand-in"):
    """Serve `handle(Request) -> Reply` on 127.0.0.1 until killed; write the port to
    `port_file` once listening."""
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self):
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            req = Request(self.command, self.path, dict(self.headers), body)
            try:
                with lock:
                    reply = handle(req)
            except Exception as e:  # a scenario bug: say so, answer 500
                print(f"{log_name}: {self.command} {self.path}: {e!r}", file=sys.stderr)
                reply = Reply.json({"error": {"message": repr(e)}}, status=500)
            print(f"{log_name}: {self.command} {self.path} -> {reply.status}", file=sys.stderr)
            if reply.delay:
                time.sleep(reply.delay)
            if reply.events is not None:
                self.send_response(reply.status)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                for name, data in reply.events:
                    text = data if isinstance(data, str) else json.dumps(data)
                    chunk = (f"event: {name}\n" if name else "") + f"data: {text}\n\n"
                    self.wfile.write(chunk.encode())
                    self.wfile.flush()
                self.close_connection = True
            else:
                payload = json.dumps(reply.body if reply.body is not None else {}).encode()
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _answer

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os

    os.replace(port_file + ".tmp", port_file)
    server.serve_forever()


def log_turn(log_dir, n, body, conv, items, **extra):
    """With `--log-dir`, write request `n` and the scripted answer there (debugging)."""
    if log_dir:
        with open(os.path.join(log_dir, f"{n:03d}.json"), "w") as f:
            json.dump({**extra, "request": body, "role": conv.role, "tag": conv.tag,
                       "side": conv.side, "reply": repr(items)}, f, indent=1)


def run(script_class, handler, log_name):
    """A kit's model.py entry point (`--scenario NAME --workspace DIR --port-file F`): serve
    `handler(script, log_dir)` for the scenario's script."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log-dir", help="write every request and its answer here (debugging)")
    args = ap.parse_args()
    if args.log_dir:
        os.makedirs(args.log_dir, exist_ok=True)
    script = script_class(args.scenario)
    script.workspace = args.workspace
    serve(handler(script, args.log_dir), args.port_file, log_name=log_name)
