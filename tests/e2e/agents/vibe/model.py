#!/usr/bin/env python3
"""The scripted model for Mistral Vibe (its default `mistral` backend: Mistral's chat
completions, which stream each tool call whole).

Vibe has no task tool: the model writes TypeScript for `run_typescript`, whose program calls
`tools.agents.spawn({name, message})` (the spawn admits the child's first message and returns
at once), then calls `wait`; a child's answer reaches the main agent as a message in its
context. A child lists the project with its `bash` tool.
"""

import json
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "standin"))

from delegation import Call, Script, Text  # noqa: E402
from openai_chat import main  # noqa: E402


class Vibe(Script):
    spawn_tool = "run_typescript"

    def spawn_program(self, tags):
        spawns = ",\n    ".join(
            f"tools.agents.spawn({{ name: {json.dumps(tag)}, message: {json.dumps(self.task(tag))} }})"
            for tag in tags)
        return Call("run_typescript", {"code": (
            "async function main() {\n"
            f"  return await Promise.all([\n    {spawns},\n  ]);\n"
            "}")})

    def main_reply(self, conv):
        tags = self.plan["tags"]
        if not any(c[1] == "run_typescript" for c in conv.calls):
            return [Text("I will delegate this."), self.spawn_program(tags)]
        answered = conv.answers()
        if all(tag in answered for tag in tags):
            return [Text(f"MAIN-DONE: {', '.join(tags)} reported back.")]
        waits = sum(1 for c in conv.calls if c[1] == "wait")
        if waits < 5:
            return [Call("wait", {"timeout_ms": 20000})]
        return [Text(f"MAIN-DONE: no answer from {', '.join(t for t in tags if t not in answered)}.")]

    def child_tool(self, tag, conv):
        return Call("bash", {"command": "ls *.txt"})


if __name__ == "__main__":
    main(Vibe, whole_calls=True)
