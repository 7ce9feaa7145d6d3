#!/usr/bin/env python3
"""The scripted model for GitHub Copilot CLI (OpenAI chat completions, its bring-your-own-key
mode).

Copilot's spawn tool is `task {name, description, prompt, agent_type, mode}`: `one` and `two`
run `mode: "sync"` (its default), `background` runs `mode: "background"`, whose launch result
names the child's agent id; the main agent then waits with `read_agent {agent_id, wait}`,
whose result holds the child's answer. A child lists the project with `glob`.
"""

import os
import re
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "standin"))

from delegation import Call, Script, Text  # noqa: E402
from openai_chat import main  # noqa: E402

AGENT_ID = re.compile(r"agent_id: ([0-9A-Za-z_-]+)")


class Copilot(Script):
    spawn_tool = "task"

    def spawn(self, tag, background):
        return Call("task", {"name": tag, "description": f"Survey text files ({tag})",
                             "prompt": self.task(tag), "agent_type": "explore",
                             "mode": "background" if background else "sync"})

    def child_tool(self, tag, conv):
        return Call("glob", {"pattern": "*.txt"})

    def background_wait(self, conv):
        # The launch result names the child; wait for it once, then end the turn.
        if not any(c[1] == "read_agent" for c in conv.calls):
            for r in conv.results:
                m = AGENT_ID.search(r.text)
                if m:
                    return [Call("read_agent", {"agent_id": m.group(1), "wait": True})]
        return [Text("MAIN-WAITING: the subagent runs in the background.")]


if __name__ == "__main__":
    main(Copilot)
