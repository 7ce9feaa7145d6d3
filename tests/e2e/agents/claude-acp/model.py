"""The scripted model for Claude Code: the Anthropic Messages stand-in (tests/e2e/standin)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "standin"))

import anthropic  # noqa: E402

if __name__ == "__main__":
    anthropic.main()
