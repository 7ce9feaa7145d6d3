"""A scripted stand-in of the Anthropic Messages API (`POST /v1/messages`, streamed or not),
for Claude Code (inside claude-agent-acp) pointed at it with ANTHROPIC_BASE_URL.

Who is asking is read from the request:
- the main agent: its first user message names `SCENARIO:<name>` and its tools include the
  spawn tool (`Agent`, `Task` in older builds). It delegates with one `tool_use` per subagent
  (all in one message, so Claude Code runs them in parallel), then ends its turn once every
  subagent's `SUB-ANSWER` is in the conversation; in the background scenario it ends the turn
  after the launch notice and answers again when Claude Code feeds it the child's result;
- a child: its first user message names `SUBAGENT:<tag>`. It runs one real tool on the
  project (Glob, else LS, Read or Bash, whichever it was given; `beta` runs `ls` in Bash,
  which asks for permission), then answers with the file names the tool returned;
- anything else (title, topic or quota requests Claude Code makes on the side): a short text.
"""

import argparse
import itertools
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import scenario as sc  # noqa: E402
from base import Reply, serve  # noqa: E402

SPAWN_TOOLS = ("Agent", "Task")
HANDBACK = "SubagentHandback"


def _texts(content):
    """Every text in a message's content, tool results included."""
    if isinstance(content, str):
        return [content]
    out = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            out.append(block.get("text", ""))
        elif block.get("type") == "tool_result":
            out.extend(_texts(block.get("content")))
    return out


def _blocks(messages, role, kind):
    for m in messages:
        if m.get("role") == role and isinstance(m.get("content"), list):
            for b in m["content"]:
                if isinstance(b, dict) and b.get("type") == kind:
                    yield b


class Model:
    def __init__(self, scenario, workspace):
        self.scenario = scenario
        self.workspace = workspace
        self.ids = itertools.count(1)

    def _id(self, prefix):
        return f"{prefix}_{next(self.ids):04d}"

    # What to say: a list of content blocks and the stop reason.

    def _main(self, body, spawn_tool):
        msgs = body.get("messages", [])
        spawned = [b for b in _blocks(msgs, "assistant", "tool_use") if b.get("name") == spawn_tool]
        tags = sc.spawn_tags(self.scenario)
        if not spawned:
            blocks = [{"type": "text", "text": sc.main_intro(self.scenario)}]
            for tag in tags:
                blocks.append({
                    "type": "tool_use", "id": self._id("toolu"), "name": spawn_tool,
                    "input": {
                        "description": sc.task_description(tag),
                        "prompt": sc.task_prompt(tag),
                        "subagent_type": "general-purpose",
                        "run_in_background": self.scenario == "background",
                    },
                })
            return "spawn", blocks, "tool_use"
        ids = {b.get("id") for b in spawned}
        failed = [r for r in _blocks(msgs, "user", "tool_result") if r.get("tool_use_id") in ids and r.get("is_error")]
        if failed:
            why = " ".join(_texts(failed))[:200]
            return "failed", [{"type": "text", "text": f"MAIN-FAILED {self.scenario}: {why}"}], "end_turn"
        # Claude Code >= 2.1.3xx hands a subagent's report back as a `system` message.
        said = "\n".join(t for m in msgs if m.get("role") != "assistant" for t in _texts(m.get("content")))
        if all(sc.sub_answered(tag, said) for tag in tags):
            return "done", [{"type": "text", "text": sc.main_done(self.scenario)}], "end_turn"
        return "wait", [{"type": "text", "text": sc.main_waiting(self.scenario)}], "end_turn"

    def _child(self, body, tag):
        msgs = body.get("messages", [])
        names = {t.get("name") for t in body.get("tools") or []}
        used = [b.get("name") for b in _blocks(msgs, "assistant", "tool_use")]
        results = list(_blocks(msgs, "user", "tool_result"))
        answer = sc.sub_answer(tag, "\n".join(_texts(results)))
        if HANDBACK in used:
            return "end", [{"type": "text", "text": answer}], "end_turn"
        if results:
            blocks = [{"type": "text", "text": answer}]
            if HANDBACK in names:
                # Claude Code >= 2.1.3xx: only a report handed back through this tool reaches
                # the caller; plain final text is dropped.
                blocks.append({"type": "tool_use", "id": self._id("toolu"), "name": HANDBACK,
                               "input": {"message": answer}})
                return "answer+handback", blocks, "tool_use"
            return "answer", blocks, "end_turn"
        if tag == "beta" and "Bash" in names:
            # A shell command needs the user's permission (asked of the client in Claude's
            # default mode): the second child exercises that path.
            name, inp = "Bash", {"command": "ls *.txt", "description": "List text files"}
        elif "Glob" in names:
            name, inp = "Glob", {"pattern": "*.txt"}
        elif "LS" in names:
            name, inp = "LS", {"path": self.workspace}
        elif "Read" in names:
            name, inp = "Read", {"file_path": os.path.join(self.workspace, sc.file_for(tag))}
        elif "Bash" in names:
            name, inp = "Bash", {"command": "ls *.txt", "description": "List text files"}
        else:
            raise ValueError(f"child {tag} was given no tool to look at files: {sorted(names)}")
        return "tool", [{"type": "tool_use", "id": self._id("toolu"), "name": name, "input": inp}], "tool_use"

    def plan(self, body):
        msgs = body.get("messages", [])
        first = next((m for m in msgs if m.get("role") == "user"), None)
        first_text = "\n".join(_texts(first.get("content"))) if first else ""
        tools = {t.get("name") for t in body.get("tools") or []}
        tag = sc.subagent_in(first_text)
        if tag and tools:
            return (f"child {tag}",) + self._child(body, tag)
        spawn_tool = next((t for t in SPAWN_TOOLS if t in tools), None)
        last = msgs[-1] if msgs else {}
        if last.get("role") == "user" and "\n".join(_texts(last.get("content"))).startswith("[SUGGESTION MODE"):
            # Claude Code asks for the user's likely next prompt; "nothing" is a valid answer.
            return "side", "suggestion", [{"type": "text", "text": ""}], "end_turn"
        if sc.scenario_in(first_text) and spawn_tool:
            return ("main",) + self._main(body, spawn_tool)
        return ("side",) + self._side(body)

    def _side(self, body):
        """Claude Code's own requests: a session title (JSON asked for by schema), the auto
        mode's security classifier (`<severity>N</severity>`, below 50 allows), or any other."""
        system = body.get("system")
        system = system if isinstance(system, str) else "\n".join(_texts(system))
        fmt = (body.get("output_config") or {}).get("format") or {}
        if fmt.get("type") == "json_schema":
            props = (fmt.get("schema") or {}).get("properties") or {}
            answer = {k: "Survey text files" for k in props}
            return "json", [{"type": "text", "text": json.dumps(answer)}], "end_turn"
        if "<severity>" in system:
            if "</severity>" in (body.get("stop_sequences") or []):
                return "classifier", [{"type": "text", "text": "<severity>3"}], "stop_sequence"
            return "classifier", [{"type": "text", "text": "<severity>3</severity>"}], "end_turn"
        return "text", [{"type": "text", "text": "OK"}], "end_turn"

    def handle(self, req):
        path = req.path.split("?", 1)[0]
        if req.method in ("GET", "HEAD"):
            return Reply.json({})
        if path.endswith("/count_tokens"):
            return Reply.json({"input_tokens": 10})
        if not path.endswith("/v1/messages") or not isinstance(req.json, dict):
            return Reply.json({"type": "error", "error": {"type": "not_found_error",
                                                          "message": f"no {path}"}}, status=404)
        body = req.json
        who, step, blocks, stop = self.plan(body)
        print(f"anthropic: {who}: {step} ({body.get('model')})", file=sys.stderr)
        delay = sc.child_delay(self.scenario, who.startswith("child") and step == "tool")
        model = body.get("model", "claude-stand-in")
        msg_id = self._id("msg")
        stop_sequence = "</severity>" if stop == "stop_sequence" else None
        usage = {"input_tokens": 10, "output_tokens": 12,
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if not body.get("stream"):
            reply = Reply.json({"id": msg_id, "type": "message", "role": "assistant",
                               "model": model, "content": blocks, "stop_reason": stop,
                               "stop_sequence": stop_sequence, "usage": usage})
            reply.delay = delay
            return reply
        events = [("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": dict(usage, output_tokens=1)}})]
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                       "content_block": {"type": "text", "text": ""}}))
                for word in re.findall(r"\S+\s*", b["text"]):
                    events.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                           "delta": {"type": "text_delta", "text": word}}))
            else:
                events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                       "content_block": {"type": "tool_use", "id": b["id"],
                                                                         "name": b["name"], "input": {}}}))
                events.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                       "delta": {"type": "input_json_delta",
                                                                 "partial_json": json.dumps(b["input"])}}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        events.append(("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": stop, "stop_sequence": stop_sequence},
                                         "usage": {"output_tokens": 12}}))
        events.append(("message_stop", {"type": "message_stop"}))
        reply = Reply.sse(events)
        reply.delay = delay
        return reply


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", required=True, choices=sorted(sc.TAGS))
    p.add_argument("--workspace", required=True)
    p.add_argument("--port-file", required=True)
    a = p.parse_args(argv)
    serve(Model(a.scenario, a.workspace).handle, a.port_file, log_name="anthropic")


if __name__ == "__main__":
    main()
