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

from delegation import TaskScript  # noqa: E402
from openai_chat import main  # noqa: E402


class Kimi(TaskScript):
    spawn_tool = "Agent"
    subagent_type = "explore"
    background_arg = "run_in_background"
    glob_tool = "Glob"


if __name__ == "__main__":
    main(Kimi)
