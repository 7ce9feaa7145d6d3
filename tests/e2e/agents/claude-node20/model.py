#!/usr/bin/env python3
"""The scripted model for Claude Code: the Anthropic Messages stand-in and its `ClaudeCode`
script (tests/e2e/standin/anthropic.py)."""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "standin"))

from anthropic import ClaudeCode, main  # noqa: E402

if __name__ == "__main__":
    main(ClaudeCode)
