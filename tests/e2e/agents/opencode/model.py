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

from delegation import TaskScript  # noqa: E402
from openai_chat import main  # noqa: E402


class OpenCode(TaskScript):
    spawn_tool = "task"
    subagent_type = "general"
    glob_tool = "glob"


if __name__ == "__main__":
    main(OpenCode)
