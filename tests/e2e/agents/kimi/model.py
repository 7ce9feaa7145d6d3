#!/usr/bin/env python3
"""The scripted model for Kimi Code CLI (its `kimi` provider speaks OpenAI chat completions).

Kimi's spawn tool is `Agent {description, prompt, subagent_type, run_in_background}` (type
`coder` by default, `explore` for read-only surveys); a child lists the project with `Glob`.
A background child's answer comes back to the main agent as a `<notification …>` user message
in a later turn.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "standin"))

from delegation import Call, Script  # noqa: E402
from openai_chat import main  # noqa: E402


class Kimi(Script):
    spawn_tool = "Agent"

    def spawn(self, tag, background):
        args = {"description": f"Survey text files ({tag})", "prompt": self.task(tag),
                "subagent_type": "explore"}
        if background:
            args["run_in_background"] = True
        return Call("Agent", args)

    def child_tool(self, tag, conv):
        return Call("Glob", {"pattern": "*.txt"})


if __name__ == "__main__":
    main(Kimi)
