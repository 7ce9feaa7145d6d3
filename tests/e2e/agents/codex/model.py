#!/usr/bin/env python3
"""The scripted model for codex (OpenAI Responses, tests/e2e/standin/openai_responses.py).

codex's multi-agent tools come in the namespace tool `multi_agent_v1`: the main agent spawns
with `spawn_agent {message}`, which never blocks, and then waits with `wait_agent {targets}`
(not in the background form: there it ends its turn and the child runs on). With multi-agent
V2 (the `codex-v2` kit) they are the namespace `collaboration`: `spawn_agent {task_name,
message, fork_turns}` and `wait_agent {timeout_ms}`, which waits for any child. A child lists the
project with `exec_command`. After the turn codex asks for a thread title by JSON schema.
"""

import json
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "standin"))

from delegation import Call, Script, Text  # noqa: E402
from openai_responses import main  # noqa: E402

MAX_WAITS = 5


class Codex(Script):
    spawn_tool = "spawn_agent"
    # Multi-agent V2: its tools include `followup_task` (V1 has none).
    v2 = False

    def reply(self, conv):
        self.v2 = "followup_task" in conv.tools
        return super().reply(conv)

    def spawn(self, tag, background):
        if self.v2:
            # No parent history: the child's first user message is its task.
            return Call("spawn_agent", {"task_name": tag, "message": self.task(tag), "fork_turns": "none"})
        return Call("spawn_agent", {"message": self.task(tag)})

    def child_tool(self, tag, conv):
        return Call("exec_command", {"cmd": "ls *.txt", "workdir": self.workspace})

    def main_reply(self, conv):
        spawned = {c[0] for c in conv.calls if c[1] == self.spawn_tool}
        waits = [c for c in conv.calls if c[1] == "wait_agent"]
        done = all(t in conv.answers() for t in self.plan["tags"])
        if spawned and not done and not self.plan["background"] and len(waits) < MAX_WAITS:
            if self.v2:
                return [Call("wait_agent", {"timeout_ms": 30000})]
            targets = []
            for r in conv.results:
                if r.call_id in spawned:
                    try:
                        targets.append(json.loads(r.text)["agent_id"])
                    except (ValueError, KeyError, TypeError):
                        pass
            if targets:
                return [Call("wait_agent", {"targets": targets, "timeout_ms": 30000})]
        return super().main_reply(conv)

    def side(self, conv):
        fmt = ((getattr(conv, "body", {}).get("text") or {}).get("format")) or {}
        if fmt.get("type") == "json_schema":
            props = (fmt.get("schema") or {}).get("properties") or {}
            return [Text(json.dumps({k: "Survey text files" for k in props}))]
        return super().side(conv)


if __name__ == "__main__":
    main(Codex)
