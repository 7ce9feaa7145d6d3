#!/usr/bin/env python3
"""The scripted model for OpenCode (OpenAI chat completions).

OpenCode's spawn tool is `task {description, prompt, subagent_type}` (types `general`,
`explore`); a child lists the project with `glob`. The session-title request has no tools and
gets a plain answer. OpenCode retries an answer it cannot parse without limit, so every request
is answered well-formed.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "standin"))

from delegation import Call, Script  # noqa: E402
from openai_chat import main  # noqa: E402


class OpenCode(Script):
    spawn_tool = "task"

    def spawn(self, tag, background):
        return Call("task", {"description": f"Survey text files ({tag})", "prompt": self.task(tag),
                             "subagent_type": "general"})

    def child_tool(self, tag, conv):
        return Call("glob", {"pattern": "*.txt"})


if __name__ == "__main__":
    main(OpenCode)
