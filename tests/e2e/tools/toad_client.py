"""Toad 0.6.20's side of a session, as its source (toad/acp/agent.py) sends it: its
`initialize`, `session/new`, one prompt, permissions allowed. Records the Toad replay case
(tests/replay/README.md): `python3 toad_client.py acp-proxy --dump D -- bash launch.sh` with
the E2E_* variables a kit's launch.sh reads set (tests/e2e/README.md)."""
import json
import os
import subprocess
import sys
cmd = sys.argv[1:]
p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
n = 0
def send(m):
    p.stdin.write(json.dumps(m) + "\n"); p.stdin.flush()
def call(method, params):
    global n
    n += 1
    send({"jsonrpc": "2.0", "id": n, "method": method, "params": params})
    mine = n
    while True:
        line = p.stdout.readline()
        if not line:
            raise SystemExit("agent gone")
        m = json.loads(line)
        if "method" in m and "id" in m:
            if m["method"] == "session/request_permission":
                opt = next(o for o in m["params"]["options"] if o["kind"].startswith("allow"))
                send({"jsonrpc": "2.0", "id": m["id"], "result": {"outcome": {"outcome": "selected", "optionId": opt["optionId"]}}})
            else:
                send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}})
        elif m.get("id") == mine:
            return m
r = call("initialize", {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True},
                        "clientInfo": {"name": "toad", "title": "Toad", "version": "0.6.20"}})
s = call("session/new", {"cwd": os.environ["E2E_WORKSPACE"], "mcpServers": []})
sid = s["result"]["sessionId"]
r = call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "SCENARIO:one survey the text files"}]})
print(json.dumps(r))
p.stdin.close(); p.wait()
