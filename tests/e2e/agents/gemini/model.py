#!/usr/bin/env python3
"""The scripted model for Gemini CLI (Gemini API).

The main agent delegates with `invoke_agent {agent_name, prompt}` to the built-in
`codebase_investigator` (read-only, so the default approval mode runs it without asking). A
subagent ends only by calling `complete_task` with its output object; for
`codebase_investigator` that is a `report`.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "standin"))

from delegation import Call, Script  # noqa: E402
from gemini import main  # noqa: E402


class Gemini(Script):
    spawn_tool = "invoke_agent"

    def spawn(self, tag, background):
        return Call("invoke_agent", {"agent_name": "codebase_investigator", "prompt": self.task(tag)})

    def child_tool(self, tag, conv):
        return Call("glob", {"pattern": "*.txt"})

    def child_answer(self, tag, answer, conv):
        return [Call("complete_task", {"report": {
            "SummaryOfFindings": answer,
            "ExplorationTrace": ["glob *.txt"],
            "RelevantLocations": [{"FilePath": "a.txt", "Reasoning": "a text file", "KeySymbols": []}],
        }})]

    def json_answer(self, conv, config):
        """Side queries in JSON mode (who speaks next, loop checks)."""
        return {"next_speaker": "user", "reasoning": "The turn is complete."}


if __name__ == "__main__":
    main(Gemini)
