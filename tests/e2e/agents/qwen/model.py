#!/usr/bin/env python3
"""The scripted model for Qwen Code (OpenAI chat completions).

Qwen's spawn tool is `agent {description, prompt, subagent_type}`. Top-level subagents run in
the background unless the call says `run_in_background: false`, so `one` and `two` say so and
`background` leaves it out (Qwen's default). A child lists the project with `glob`. Qwen also
asks side questions: a permission classifier (tool `respond_in_schema`; a plain answer makes it
"couldn't classify", so Qwen asks the client), prompt suggestions and a memory pass; they get
a plain answer.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "standin"))

from delegation import Call, Script  # noqa: E402
from openai_chat import main  # noqa: E402


class Qwen(Script):
    spawn_tool = "agent"

    def spawn(self, tag, background):
        args = {"description": f"Survey text files ({tag})", "prompt": self.task(tag),
                "subagent_type": "general-purpose"}
        if not background:
            args["run_in_background"] = False
        return Call("agent", args)

    def child_tool(self, tag, conv):
        return Call("glob", {"pattern": "*.txt"})

    def reply(self, conv):
        last = conv.user_texts[-1] if conv.user_texts else ""
        if ("respond_in_schema" in conv.tools  # the auto-mode permission classifier
                or conv.system.startswith("You are now acting as the managed memory")
                or last.startswith("[SUGGESTION MODE")):
            conv.side = True
        return super().reply(conv)


if __name__ == "__main__":
    main(Qwen)
