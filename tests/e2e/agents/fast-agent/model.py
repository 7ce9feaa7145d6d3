#!/usr/bin/env python3
"""The scripted model for fast-agent (its `generic` provider: OpenAI chat completions).

With `--subagents` the main agent has the built-in `subagent {message, label}` tool (a label
is 1-32 letters, digits, spaces, `_` or `-`). A child has its parent's tools but `subagent`
(with `--shell`, a shell tool named `bash`; the parent's is `execute`) and lists the project
with `ls`.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "standin"))

from delegation import Call, Script  # noqa: E402
from openai_chat import main  # noqa: E402


class FastAgent(Script):
    spawn_tool = "subagent"

    def spawn(self, tag, background):
        return Call("subagent", {"message": self.task(tag), "label": f"Survey text files {tag}"})

    def child_tool(self, tag, conv):
        # The parent's shell tool is `execute`; a child's, `bash`.
        shell = "bash" if "bash" in conv.tools else "execute"
        # The child's shell does not start in the project: name it.
        return Call(shell, {"command": f"ls {self.workspace}"})


if __name__ == "__main__":
    main(FastAgent)
