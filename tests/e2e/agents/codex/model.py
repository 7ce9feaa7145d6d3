"""The scripted model for codex: the OpenAI Responses stand-in (tests/e2e/standin)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "standin"))

import openai_responses  # noqa: E402

if __name__ == "__main__":
    openai_responses.main()
