#!/usr/bin/env python3
"""The scripted model for Cline (OpenAI chat completions, its `openai-compatible` provider).

Cline's spawn tool is `spawn_agent {systemPrompt, task}`; a child lists the project with
`run_commands` (`ls *.txt`).
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "standin"))

from delegation import Call, Script  # noqa: E402
from openai_chat import main  # noqa: E402


class Cline(Script):
    spawn_tool = "spawn_agent"

    def spawn(self, tag, background):
        return Call("spawn_agent", {"systemPrompt": "You survey projects.", "task": self.task(tag)})

    def child_tool(self, tag, conv):
        return Call("run_commands", {"commands": ["ls *.txt"]})


if __name__ == "__main__":
    main(Cline)
