#!/usr/bin/env python3
"""The codex kit's scripted model (tests/e2e/agents/codex/model.py), which speaks
multi-agent V2 when the request offers its tools."""

import os
import runpy
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
here = os.path.dirname(os.path.abspath(__file__))
runpy.run_path(os.path.join(here, "..", "codex", "model.py"), run_name="__main__")
