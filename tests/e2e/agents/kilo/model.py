#!/usr/bin/env python3
"""The scripted model for Kilo Code CLI (OpenAI chat completions).

Kilo's spawn tool is OpenCode's `task {description, prompt, subagent_type}` with a
`background` flag: `one` and `two` run in the foreground, `background` sets it (the form the
tool's description steers models to). A child lists the project with `glob`. The
session-title request has no tools and gets a plain answer.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "standin"))

from delegation import TaskScript  # noqa: E402
from openai_chat import main  # noqa: E402


class Kilo(TaskScript):
    spawn_tool = "task"
    subagent_type = "general"
    background_arg = "background"
    glob_tool = "glob"


if __name__ == "__main__":
    main(Kilo)
