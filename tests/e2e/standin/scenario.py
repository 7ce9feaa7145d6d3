"""What every scripted model says, whatever its wire: the texts of the scenarios in
tests/e2e/README.md and how a request is told apart (main agent, child, or a side request such as
a title). The API modules (anthropic.py, openai_responses.py, ...) only translate this into
their wire format. Standard library only.
"""

import re

# The subagents each scenario delegates to, by tag.
TAGS = {"one": ["alpha"], "two": ["alpha", "beta"], "background": ["alpha"]}

_SCENARIO = re.compile(r"SCENARIO:([a-z]+)")
_SUBAGENT = re.compile(r"SUBAGENT:([a-z]+)")
_FILE = re.compile(r"\b([ab])\.txt\b")


# How long a background child takes over its first step: long enough for the main agent to
# end its turn first, so its work arrives after the turn as it would in real use.
BACKGROUND_CHILD_DELAY = 3.0


def child_delay(scenario, first_step):
    return BACKGROUND_CHILD_DELAY if scenario == "background" and first_step else 0.0


def task_prompt(tag):
    """What the main agent asks a subagent to do (its first words name the subagent)."""
    return f"SUBAGENT:{tag} list the text files in the project"


def task_description(tag):
    return f"Survey text files ({tag})"


def scenario_in(text):
    """The scenario a main agent's first user message names, or None."""
    m = _SCENARIO.search(text or "")
    return m.group(1) if m else None


def subagent_in(text):
    """The tag a child's first user message names, or None."""
    m = _SUBAGENT.search(text or "")
    return m.group(1) if m else None


_CONTENT = re.compile(r"hello from ([ab])\b")


def files_in(text):
    """The project's text files a tool result names or quotes (`hello from a`), sorted: proof
    that a real tool ran on the project."""
    text = text or ""
    return sorted({f"{m}.txt" for m in _FILE.findall(text) + _CONTENT.findall(text)})


def file_for(tag):
    """The file a child reads when its only tool is a file reader: alpha a.txt, beta b.txt."""
    return "b.txt" if tag == "beta" else "a.txt"


def sub_answer(tag, tool_output):
    found = files_in(tool_output)
    return f"SUB-ANSWER {tag}: " + (" ".join(found) if found else "no text files found")


def sub_answered(tag, text):
    return f"SUB-ANSWER {tag}:" in (text or "")


def main_intro(scenario):
    return f"I will delegate this ({scenario})."


def main_waiting(scenario):
    return f"MAIN-WAITING {scenario}: the subagent runs in the background."


def main_done(scenario):
    return f"MAIN-DONE {scenario}: " + ", ".join(TAGS.get(scenario, [])) + " reported"


def spawn_tags(scenario):
    tags = TAGS.get(scenario)
    if tags is None:
        raise ValueError(f"unknown scenario {scenario!r}")
    return tags
