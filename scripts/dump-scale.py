#!/usr/bin/env python3
"""Record a big dump with the proxy and time `dump view`, `dump stats` and `dump check` on it.

The agent side is a scripted agent (`acp-proxy demo-agent --script`) that answers Zed's
handshake and one prompt with AGENT_BYTES of frames in the shapes claude-agent-acp sends:
message chunks, and (unless --flat) one legacy subagent per group (spawn, child tool call
with its output, child text, completion), so the dump holds about twice AGENT_BYTES (each
frame recorded from the agent and to the client, child events only once). The release proxy
records it in Zed mode; then each tool reads it under /usr/bin/time -v.

  scripts/dump-scale.py --agent-bytes 560M --workdir /tmp/dump-scale [--flat] [--prefix 10]
"""
import argparse, json, os, random, re, subprocess, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--agent-bytes", default="560M")
ap.add_argument("--workdir", default="/tmp/dump-scale")
ap.add_argument("--proxy", default="target/release/acp-proxy")
ap.add_argument("--flat", action="store_true", help="no subagents: the parent's own tool calls")
ap.add_argument("--prefix", type=int, default=0, help="also measure the first 1/N of the dump")
a = ap.parse_args()
size = int(a.agent_bytes[:-1]) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[a.agent_bytes[-1]] \
    if a.agent_bytes[-1] in "KMG" else int(a.agent_bytes)
os.makedirs(a.workdir, exist_ok=True)
proxy = os.path.abspath(a.proxy)
w = lambda name: os.path.join(a.workdir, name)

random.seed(7)
S = "sess-big-1"
words = "the quick brown fox jumps over a lazy dog while agents delegate work to subagents".split()
text = lambda n: " ".join(random.choice(words) for _ in range(n))
up = lambda u: json.dumps({"jsonrpc": "2.0", "method": "session/update",
                           "params": {"sessionId": S, "update": u}}, separators=(",", ":"))
with open(w("agent-out.jsonl"), "w") as out:
    written, i = 0, 0
    while written < size:
        i += 1
        spawn, child = f"toolu_{i:07d}_s", f"toolu_{i:07d}_c"
        tool = "Bash" if a.flat else "Agent"
        parent = {} if a.flat else {"parentToolUseId": spawn}
        lines = [
            up({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text(12)}}),
            up({"sessionUpdate": "tool_call", "toolCallId": spawn, "title": "Task", "kind": "think",
                "status": "pending", "rawInput": {}, "_meta": {"claudeCode": {"toolName": tool}}}),
            up({"sessionUpdate": "tool_call_update", "toolCallId": spawn, "title": f"Survey part {i}",
                "rawInput": {"description": f"Survey part {i}", "prompt": text(20)},
                "_meta": {"claudeCode": {"toolName": tool}}}),
            up({"sessionUpdate": "tool_call", "toolCallId": child, "title": "Read file", "kind": "read",
                "status": "pending", "_meta": {"claudeCode": {**parent, "toolName": "Read"}}}),
            up({"sessionUpdate": "tool_call_update", "toolCallId": child, "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": text(random.randint(100, 900))}}],
                "_meta": {"claudeCode": {**parent, "toolName": "Read"}}}),
            up({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text(30)},
                **({} if a.flat else {"_meta": {"claudeCode": parent}})}),
            up({"sessionUpdate": "tool_call_update", "toolCallId": spawn, "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": text(40)}}],
                "_meta": {"claudeCode": {"toolName": tool}}}),
        ] + [up({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text(random.randint(3, 40))}})
             for _ in range(random.randint(2, 8))]
        for l in lines:
            out.write(l + "\n")
            written += len(l) + 1
    out.write(json.dumps({"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}}, separators=(",", ":")) + "\n")
print(f"agent output: {written} bytes, {i} groups", file=sys.stderr)

steps = [{"expect": "initialize"}, {"reply": {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}}},
         {"expect": "session/new"}, {"reply": {"sessionId": S}},
         {"expect": "session/prompt"}, {"send_file": w("agent-out.jsonl")}]
open(w("agent.jsonl"), "w").write("".join(json.dumps(s) + "\n" for s in steps))
open(w("proxy.toml"), "w").write(
    'log_level = "error"\n[dump]\nqueue_frames = 4000000\nmax_bytes = 0\n'
    f'[store]\npath = "{w("store.sqlite3")}"\n')
for f in ["dump.jsonl", "store.sqlite3"]:
    if os.path.exists(w(f)):
        os.remove(w(f))
t0 = time.time()
p = subprocess.Popen([proxy, "--config", w("proxy.toml"), "--dump", w("dump.jsonl"), "--",
                      proxy, "demo-agent", "--script", w("agent.jsonl")],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
zed = {"protocolVersion": 1, "clientInfo": {"name": "zed", "title": "Zed", "version": "0.212.5"},
       "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}}
for msg in [{"id": 0, "method": "initialize", "params": zed},
            {"id": 1, "method": "session/new", "params": {"cwd": "/home/user/project", "mcpServers": []}},
            {"id": 3, "method": "session/prompt", "params": {"sessionId": S, "prompt": [{"type": "text", "text": "go"}]}}]:
    p.stdin.write((json.dumps({"jsonrpc": "2.0", **msg}) + "\n").encode())
    p.stdin.flush()
for line in p.stdout:
    if b'"stopReason"' in line and b'"id":3' in line:
        break
p.stdin.close()
p.wait()
dump = w("dump.jsonl")
print(f"recorded {os.path.getsize(dump)} bytes in {time.time() - t0:.1f} s", file=sys.stderr)

files = [dump]
if a.prefix > 1:
    lines = sum(1 for _ in open(dump, "rb"))
    with open(dump, "rb") as src, open(w("prefix.jsonl"), "wb") as dst:
        for n, l in enumerate(src):
            if n >= lines // a.prefix:
                break
            dst.write(l)
    files.insert(0, w("prefix.jsonl"))
print("| dump | size | tool | wall | user | max RSS |")
print("|---|---|---|---|---|---|")
for f in files:
    for tool in ["view", "stats", "check"]:
        r = subprocess.run(["/usr/bin/time", "-v", proxy, "dump", tool, f],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        get = lambda key: re.search(key + r".*?: (\S+)", r.stderr).group(1)
        print(f"| {os.path.basename(f)} | {os.path.getsize(f) / 1e6:.0f} MB | {tool} | {get('Elapsed')} "
              f"| {get('User time')} s | {int(get('Maximum resident set size')) / 1024:.0f} MiB |")
