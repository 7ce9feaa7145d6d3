#!/usr/bin/env python3
"""A small client that drives an ACP agent (or acp-proxy in front of one) the way Zed does.

    zed_client.py --workspace DIR --scenario NAME [options] -- COMMAND [ARGS...]

It sends Zed's `initialize` (clientInfo "zed", Zed's capabilities and `_meta` flags),
`session/new` with `cwd` = DIR, and `session/prompt` `SCENARIO:<name> survey the text files`;
answers permission requests with an allow option, serves `fs/read_text_file` and
`fs/write_text_file` from DIR (and nowhere else), runs `terminal/*` commands through `sh -c`
in DIR as Zed does (it advertises `terminal: true`, and agents rely on it), and answers any
other agent request with -32601. After the prompt's response it keeps reading until the agent has been quiet for
`--quiet` seconds (background subagents finish after the turn). With `--load-children` it then
loads every subagent card's child session with `session/load`, as Zed does when a thread is
reopened. It prints a JSON summary on stdout and exits non-zero when the run did not end
cleanly (error response, timeout, agent exit, a stop reason other than `end_turn`, or the
parent thread without the `--expect` text, `MAIN-DONE` by default).

Standard library only.
"""

import argparse
import json
import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
import time

ZED_INITIALIZE = {
    "protocolVersion": 1,
    "clientCapabilities": {
        "fs": {"readTextFile": True, "writeTextFile": True},
        "terminal": True,
        "auth": {"terminal": True},
        "session": {"configOptions": {"boolean": {}}},
        "elicitation": {"form": {}, "url": {}},
        "_meta": {"terminal_output": True, "terminal-auth": True},
    },
    "clientInfo": {"name": "zed", "version": "0.232.0", "title": "Zed"},
}


class Failed(Exception):
    pass


class Terminal:
    """One `terminal/create`: a shell command whose output is kept up to a byte limit (the
    oldest bytes go first, as ACP asks)."""

    def __init__(self, params, workspace):
        command = params["command"]
        args = params.get("args") or []
        line = " ".join([command] + [shlex.quote(a) for a in args])
        env = dict(os.environ)
        for var in params.get("env") or []:
            env[var["name"]] = var["value"]
        self.limit = params.get("outputByteLimit")
        self.output = bytearray()
        self.truncated = False
        self.done = threading.Event()
        self.proc = subprocess.Popen(
            ["sh", "-c", line], cwd=params.get("cwd") or workspace, env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )
        threading.Thread(target=self._collect, daemon=True).start()

    def _collect(self):
        for chunk in iter(lambda: self.proc.stdout.read1(65536), b""):
            self.output += chunk
            if self.limit is not None and len(self.output) > self.limit:
                del self.output[: len(self.output) - self.limit]
                self.truncated = True
        self.proc.wait()
        self.done.set()

    def exit_status(self):
        if not self.done.is_set():
            return None
        rc = self.proc.returncode
        if rc < 0:
            return {"exitCode": None, "signal": signal.Signals(-rc).name}
        return {"exitCode": rc, "signal": None}

    def result(self):
        out = {"output": self.output.decode("utf-8", "replace"), "truncated": self.truncated}
        status = self.exit_status()
        if status is not None:
            out["exitStatus"] = status
        return out

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()


class Client:
    def __init__(self, argv, workspace, trace, stderr_path):
        self.workspace = os.path.realpath(workspace)
        self.t0 = time.monotonic()
        self.trace = open(trace, "w") if trace else None
        self.stderr_file = open(stderr_path, "wb") if stderr_path else None
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr_file or subprocess.DEVNULL,
        )
        self.inbox = queue.Queue()
        self.next_id = 1
        self.write_lock = threading.Lock()
        self.last_frame = time.monotonic()
        self.errors = []  # protocol problems seen (bad JSON, error responses)
        self.updates = {}  # session id -> list of update objects
        self.agent_requests = []  # (method, answered with)
        self.terminals = {}
        threading.Thread(target=self._read, daemon=True).start()

    def now(self):
        return round(time.monotonic() - self.t0, 3)

    def _log(self, direction, msg):
        if self.trace:
            self.trace.write(json.dumps({"t": self.now(), "dir": direction, "msg": msg}) + "\n")
            self.trace.flush()

    def _read(self):
        for line in self.proc.stdout:
            line = line.strip()
            if not line:
                continue
            self.last_frame = time.monotonic()
            try:
                msg = json.loads(line)
            except ValueError:
                self.errors.append(f"not JSON from the agent: {line[:200]!r}")
                continue
            self._log("in", msg)
            self.inbox.put(msg)
        self.inbox.put(None)

    def send(self, msg):
        self._log("out", msg)
        data = (json.dumps(msg) + "\n").encode()
        with self.write_lock:
            try:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except BrokenPipeError:
                raise Failed("the agent closed its stdin")

    def request(self, method, params, timeout):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return self.pump(timeout, want=rid)

    def pump(self, timeout, want=None, quiet=None):
        """Handle incoming frames until the response to `want` arrives (returned), or, with
        `quiet`, until no frame came for `quiet` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                if quiet is not None:
                    return None
                raise Failed(f"timed out after {timeout}s waiting for the response to id {want}")
            wait = left if quiet is None else min(left, quiet)
            try:
                msg = self.inbox.get(timeout=wait)
            except queue.Empty:
                if quiet is not None and time.monotonic() - self.last_frame >= quiet:
                    return None
                continue
            if msg is None:
                raise Failed(f"the agent exited (status {self.proc.poll()}) while waiting")
            if "method" in msg:
                self._handle(msg)
            elif want is not None and msg.get("id") == want:
                if "error" in msg:
                    raise Failed(f"error response to id {want}: {json.dumps(msg['error'])}")
                return msg.get("result")
            elif "error" in msg:
                self.errors.append(f"error response: {json.dumps(msg)[:300]}")

    def _handle(self, msg):
        method, params, rid = msg["method"], msg.get("params") or {}, msg.get("id")
        if method == "session/update":
            self.updates.setdefault(params.get("sessionId"), []).append(params.get("update") or {})
            return
        if rid is None:
            return  # other notifications: nothing to answer
        if method == "terminal/wait_for_exit" and params.get("terminalId") in self.terminals:
            # Answered when the command ends; the frames meanwhile are handled as usual.
            term = self.terminals[params["terminalId"]]

            def wait():
                term.done.wait()
                self.send({"jsonrpc": "2.0", "id": rid, "result": term.exit_status()})

            self.agent_requests.append((method, "result"))
            threading.Thread(target=wait, daemon=True).start()
            return
        try:
            result = self._answer(method, params)
            reply = {"jsonrpc": "2.0", "id": rid, "result": result}
            self.agent_requests.append((method, "result"))
        except LookupError as e:
            reply = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": str(e)}}
            self.agent_requests.append((method, "-32601"))
        except OSError as e:
            reply = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": str(e)}}
            self.agent_requests.append((method, "-32603"))
        self.send(reply)

    def _path(self, path):
        real = os.path.realpath(path)
        if os.path.commonpath([real, self.workspace]) != self.workspace:
            raise OSError(f"{path} is outside the project")
        return real

    def _answer(self, method, params):
        if method == "session/request_permission":
            options = params.get("options") or []
            for kind in ("allow_once", "allow_always"):
                for o in options:
                    if o.get("kind") == kind:
                        return {"outcome": {"outcome": "selected", "optionId": o["optionId"]}}
            if options:  # no kinds given: the first option is the agent's "go ahead"
                return {"outcome": {"outcome": "selected", "optionId": options[0]["optionId"]}}
            return {"outcome": {"outcome": "cancelled"}}
        if method == "fs/read_text_file":
            with open(self._path(params["path"]), encoding="utf-8") as f:
                lines = f.read().splitlines(keepends=True)
            start = max(int(params.get("line") or 1), 1) - 1
            limit = params.get("limit")
            chosen = lines[start:] if limit is None else lines[start : start + int(limit)]
            return {"content": "".join(chosen)}
        if method == "fs/write_text_file":
            with open(self._path(params["path"]), "w", encoding="utf-8") as f:
                f.write(params.get("content", ""))
            return None
        if method == "terminal/create":
            tid = f"term-{len(self.terminals) + 1}"
            self.terminals[tid] = Terminal(params, self.workspace)
            return {"terminalId": tid}
        if method in ("terminal/output", "terminal/kill", "terminal/release"):
            term = self.terminals.get(params.get("terminalId"))
            if term is None:
                raise OSError(f"no terminal {params.get('terminalId')!r}")
            if method == "terminal/output":
                return term.result()
            term.kill()
            if method == "terminal/release":
                del self.terminals[params["terminalId"]]
            return {}
        raise LookupError(f"method not found: {method}")

    def close(self):
        for term in self.terminals.values():
            term.kill()
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.returncode


def entries(updates):
    """Zed's entry count for a list of updates (user run, assistant run, one per new tool call)."""
    out, seen, last = [], set(), None
    for u in updates:
        kind = u.get("sessionUpdate")
        if kind == "user_message_chunk":
            if last != "user":
                out.append("user")
            last = "user"
        elif kind in ("agent_message_chunk", "agent_thought_chunk"):
            if last != "assistant":
                out.append("assistant")
            last = "assistant"
        elif kind == "tool_call" and u.get("toolCallId") not in seen:
            seen.add(u.get("toolCallId"))
            out.append("tool")
            last = "tool"
    return out


def cards(updates):
    """Tool calls of a thread by id: last title and status, tool name, subagent info."""
    out = {}
    for u in updates:
        if u.get("sessionUpdate") not in ("tool_call", "tool_call_update"):
            continue
        c = out.setdefault(u.get("toolCallId"), {"id": u.get("toolCallId"), "updates": 0})
        c["updates"] += 1
        for key in ("title", "status", "kind"):
            if u.get(key) is not None:
                c[key] = u[key]
        meta = u.get("_meta") or {}
        if isinstance(meta.get("subagent_session_info"), dict):
            c["subagent_session_info"] = meta["subagent_session_info"]
        if meta.get("tool_name"):
            c["tool_name"] = meta["tool_name"]
    return list(out.values())


def text_of(updates, kind="agent_message_chunk"):
    return "".join(
        (u.get("content") or {}).get("text", "")
        for u in updates
        if u.get("sessionUpdate") == kind and isinstance(u.get("content"), dict)
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--prompt", help="override the prompt text")
    ap.add_argument("--timeout", type=float, default=120, help="seconds for the prompt's turn")
    ap.add_argument("--quiet", type=float, default=2.0,
                    help="after the turn, read until the agent was silent this long")
    ap.add_argument("--linger", type=float, default=0,
                    help="read at least this long after the turn (background follow-ups)")
    ap.add_argument("--expect", default="MAIN-DONE",
                    help="text the parent thread must hold at the end ('' for none)")
    ap.add_argument("--mode", help="session/set_mode to this mode id before the prompt")
    ap.add_argument("--load-children", action="store_true",
                    help="session/load every card's child session, as Zed does on reopen")
    ap.add_argument("--trace", help="write every frame to this JSONL file")
    ap.add_argument("--stderr", help="write the agent's stderr to this file")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    argv = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not argv:
        ap.error("no agent command after --")

    c = Client(argv, args.workspace, args.trace, args.stderr)
    summary = {"scenario": args.scenario, "ok": False}
    try:
        t = time.monotonic()
        init = c.request("initialize", ZED_INITIALIZE, timeout=60)
        summary["agentInfo"] = init.get("agentInfo")
        summary["t_initialize"] = round(time.monotonic() - t, 2)
        t = time.monotonic()
        new = c.request("session/new", {"cwd": c.workspace, "mcpServers": []}, timeout=60)
        sid = new["sessionId"]
        summary["sessionId"] = sid
        summary["t_session_new"] = round(time.monotonic() - t, 2)
        if args.mode:
            c.request("session/set_mode", {"sessionId": sid, "modeId": args.mode}, timeout=30)
        prompt = args.prompt or f"SCENARIO:{args.scenario} survey the text files"
        t = time.monotonic()
        res = c.request(
            "session/prompt",
            {"sessionId": sid, "prompt": [{"type": "text", "text": prompt}]},
            timeout=args.timeout,
        )
        summary["stopReason"] = res.get("stopReason")
        summary["t_prompt"] = round(time.monotonic() - t, 2)
        t = time.monotonic()
        if args.linger:
            c.pump(args.linger, quiet=args.linger)
        c.pump(args.timeout, quiet=args.quiet)
        summary["t_after_turn"] = round(time.monotonic() - t, 2)
        parent = c.updates.get(sid, [])
        summary["parent"] = {
            "updates": len(parent),
            "entries": len(entries(parent)),
            "text": text_of(parent),
            "cards": cards(parent),
        }
        summary["other_sessions"] = {k: len(v) for k, v in c.updates.items() if k != sid}
        if args.load_children:
            children = {}
            for card in summary["parent"]["cards"]:
                info = card.get("subagent_session_info")
                if not info:
                    continue
                child = info["session_id"]
                before = len(c.updates.get(child, []))
                c.request("session/load",
                          {"sessionId": child, "cwd": c.workspace, "mcpServers": []}, timeout=30)
                got = c.updates.get(child, [])[before:]
                children[child] = {
                    "updates": len(got),
                    "entries": entries(got),
                    "user": text_of(got, "user_message_chunk"),
                    "text": text_of(got),
                    "tools": [(x.get("title"), x.get("status")) for x in cards(got)],
                }
            summary["children"] = children
        summary["agent_requests"] = c.agent_requests
        summary["errors"] = c.errors
        summary["ok"] = (summary["stopReason"] == "end_turn" and not c.errors
                         and args.expect in summary["parent"]["text"])
    except Failed as e:
        summary["failure"] = str(e)
        summary["errors"] = c.errors
    except (KeyError, TypeError, AttributeError) as e:
        summary["failure"] = f"unexpected response shape: {e!r}"
    summary["t_total"] = c.now()
    summary["agent_exit"] = c.close()
    print(json.dumps(summary, indent=1, ensure_ascii=False))
    sys.exit(0 if summary["ok"] else 1)


if __name__ == "__main__":
    main()
