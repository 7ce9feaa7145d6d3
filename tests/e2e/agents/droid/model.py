#!/usr/bin/env python3
"""The scripted model for Factory Droid (OpenAI chat completions, a custom model).

Droid's spawn tool is `Task {subagent_type, description, prompt, await}`. A Task runs in the
background unless it says `await: true`, so `one` and `two` say so and `background` leaves it
out (Droid's default). `worker` is one of Droid's built-in subagent types. A child lists the
project with `LS`.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "standin"))

from delegation import Call, Script  # noqa: E402
from openai_chat import main  # noqa: E402


class Droid(Script):
    spawn_tool = "Task"

    def spawn(self, tag, background):
        args = {"subagent_type": "worker", "description": f"Survey text files ({tag})",
                "prompt": self.task(tag)}
        if not background:
            args["await"] = True
        return Call("Task", args)

    def child_tool(self, tag, conv):
        return Call("LS", {"directory_path": "."})


if __name__ == "__main__":
    main(Droid)
