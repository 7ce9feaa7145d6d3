#!/usr/bin/env python3
"""The scripted model for pi with the pi-subagents extension (OpenAI chat completions).

The spawn tool is `Agent {prompt, description, subagent_type, run_in_background?}`; a child
lists the project with `ls`. In `background` the main turn ends first; the extension then
hands the child's result to the main agent as a follow-up message, which the main agent
answers with `MAIN-DONE`.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "standin"))

from delegation import Call, Script  # noqa: E402
from openai_chat import main  # noqa: E402


class Pi(Script):
    spawn_tool = "Agent"

    def spawn(self, tag, background):
        args = {"prompt": self.task(tag), "description": f"Survey text files ({tag})",
                "subagent_type": "general-purpose"}
        if background:
            args["run_in_background"] = True
        return Call("Agent", args)

    def child_tool(self, tag, conv):
        return Call("ls", {"path": "."})


if __name__ == "__main__":
    main(Pi)
