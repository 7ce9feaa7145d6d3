"""The delegation scenarios, independent of any model API's wire format.

A stand-in turns each model request into a `Conversation` (who is asking, which tool results
came back, what the user messages say) and asks `Script.reply` what the model says next: a
list of `Text` and `Call` items. The agent-specific bits (the spawn tool's name and arguments,
the child's tool, how a child hands its answer back) are the `Script`'s hooks.

The scenarios (see tests/e2e/README.md):
- `one`: the main agent spawns `alpha`; `two`: `alpha` and `beta` in one turn (in parallel
  where the agent runs them so); `background`: `alpha` in the background.
- A child runs one real tool on the project, then answers `SUB-ANSWER <tag>: …` naming the
  text files the tool's result showed.
- The main agent ends its turn with `MAIN-DONE …` once every spawn's result is in. In the
  background form the child is slow (its first answer waits a few seconds), the main turn
  ends with `MAIN-WAITING …`, and the main agent answers `MAIN-DONE …` when the child's answer
  reaches it later (a notification message or a result tool).
"""

import itertools
import re

SCENARIOS = {
    "one": {"tags": ["alpha"], "background": False},
    "two": {"tags": ["alpha", "beta"], "background": False},
    "background": {"tags": ["alpha"], "background": True},
    # For clients that are interrupted mid-subagent (tests/e2e/clients.rs): the child's
    # answer, after its tool ran, takes long enough for the client's Ctrl-C to land first.
    "interrupt": {"tags": ["alpha"], "background": False, "slow_answer": 20.0},
}

MAIN_RE = re.compile(r"SCENARIO:(\w+)")
CHILD_RE = re.compile(r"SUBAGENT:(\w+)")
ANSWER_RE = re.compile(r"SUB-ANSWER (\w+):")
PROJECT_FILES = ("a.txt", "b.txt")
BACKGROUND_CHILD_DELAY = 3.0


class Text:
    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return f"Text({self.text!r})"


class Call:
    _ids = itertools.count(1)

    def __init__(self, name, args, call_id=None):
        self.name = name
        self.args = args
        self.id = call_id or f"call_{next(Call._ids):04d}"

    def __repr__(self):
        return f"Call({self.name}, {self.args!r}, {self.id})"


class Result:
    """A tool result the agent sent back: the call's id and name (where the wire says) and
    its text."""

    def __init__(self, call_id, name, text):
        self.call_id = call_id
        self.name = name
        self.text = text


class Conversation:
    """What a scenario needs to know about one model request."""

    def __init__(self, user_texts, calls, results, tools, side=False, system=""):
        self.user_texts = user_texts  # every user message's text, in order
        self.calls = calls  # every tool call the model made so far: (id, name, args)
        self.results = results  # every tool result, in order
        self.tools = tools  # names of the tools offered
        self.side = side  # the agent asks for something else (title, schema, summary)
        self.system = system
        self.role, self.tag = self._who()

    def _who(self):
        """("main", scenario), ("child", tag) or (None, None), from the first user message
        that carries a marker (agents put context messages of their own before the task)."""
        for text in self.user_texts:
            m = CHILD_RE.search(text)
            if m:
                return "child", m.group(1)
            m = MAIN_RE.search(text)
            if m:
                return "main", m.group(1)
        return None, None

    def answers(self):
        """Tags of the children whose `SUB-ANSWER` reached this conversation, by any path."""
        seen = []
        for text in [r.text for r in self.results] + self.user_texts:
            for tag in ANSWER_RE.findall(text):
                if tag not in seen:
                    seen.append(tag)
        return seen


class Script:
    """The scenario logic; subclass and override the hooks for an agent."""

    spawn_tool = None  # the agent's spawn tool's name

    def __init__(self, scenario):
        if scenario not in SCENARIOS:
            raise SystemExit(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}")
        self.scenario = scenario
        self.plan = SCENARIOS[scenario]

    # --- hooks -------------------------------------------------------------------------
    def spawn(self, tag, background):
        """The Call that delegates `SUBAGENT:<tag> …` to a subagent."""
        raise NotImplementedError

    def child_tool(self, tag, conv):
        """The real tool the child runs on the project."""
        raise NotImplementedError

    def child_answer(self, tag, answer, conv):
        """How the child hands back its answer; most agents take the final text."""
        return [Text(answer)]

    def side(self, conv):
        """The answer to a side request (a title, a classifier, a summary)."""
        return [Text("Survey of the text files.")]

    def delay(self, conv):
        """Seconds the model takes before this answer. A background child's first answer
        waits, so that the main turn ends before the child does, as with real work."""
        if self.plan["background"] and conv.role == "child" and not conv.results:
            return BACKGROUND_CHILD_DELAY
        if conv.role == "child" and conv.results:
            return self.plan.get("slow_answer", 0)
        return 0

    def background_wait(self, conv):
        """The main agent's end of turn after launching background children."""
        return [Text("MAIN-WAITING: the subagent runs in the background.")]

    # --- the scenario --------------------------------------------------------------------
    def task(self, tag):
        return f"SUBAGENT:{tag} list the text files in the project and report what you find"

    def reply(self, conv):
        if conv.side or conv.role is None:
            return self.side(conv)
        if conv.role == "child":
            return self.child_reply(conv)
        return self.main_reply(conv)

    def child_reply(self, conv):
        tag = conv.tag
        if not conv.results:
            return [Text(f"Subagent {tag} looking around."), self.child_tool(tag, conv)]
        found = [f for f in PROJECT_FILES if any(f in r.text for r in conv.results)]
        what = ", ".join(found) if found else "no text files"
        return self.child_answer(tag, f"SUB-ANSWER {tag}: the project holds {what}.", conv)

    def main_reply(self, conv):
        tags = self.plan["tags"]
        spawned = [c for c in conv.calls if c[1] == self.spawn_tool]
        if not spawned:
            calls = [self.spawn(tag, self.plan["background"]) for tag in tags]
            return [Text("I will delegate this.")] + calls
        answered = conv.answers()
        if all(tag in answered for tag in tags):
            return [Text(f"MAIN-DONE: {', '.join(tags)} reported back.")]
        if self.plan["background"]:
            return self.background_wait(conv)
        # A foreground spawn came back without the child's answer (failed or refused): end
        # the turn, saying so, rather than loop.
        return [Text(f"MAIN-DONE: no answer from {', '.join(t for t in tags if t not in answered)}.")]


class TaskScript(Script):
    """A spawn tool shaped `{description, prompt, subagent_type}` (OpenCode's and Kilo's `task`,
    Kimi's `Agent`), whose background form is one boolean argument; a child lists the project
    with the agent's glob tool."""

    subagent_type = None  # the type the main agent asks for
    background_arg = None  # the argument that launches in the background (None: no such form)
    glob_tool = None  # the child's tool, called with `{"pattern": "*.txt"}`

    def spawn(self, tag, background):
        args = {"description": f"Survey text files ({tag})", "prompt": self.task(tag),
                "subagent_type": self.subagent_type}
        if background and self.background_arg:
            args[self.background_arg] = True
        return Call(self.spawn_tool, args)

    def child_tool(self, tag, conv):
        return Call(self.glob_tool, {"pattern": "*.txt"})
