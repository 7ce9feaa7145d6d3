"""A scripted stand-in of the OpenAI Responses API (`POST /v1/responses`, streamed), for codex
(behind codex-acp) pointed at it through a custom model provider.

Who is asking is read from the request's input items: the first user message that names
`SCENARIO:<name>` or `SUBAGENT:<tag>` says whether it is the main agent or a child.
- The main agent spawns one child per tag with `spawn_agent` (codex's multi-agent tools come as
  the namespace tool `multi_agent_v1`; a call to one of them must name the namespace), all in
  one response, then waits for them with `wait_agent`, and ends its turn once every child's
  `SUB-ANSWER` is in its input.
- A child runs one real shell command on the project (`exec_command`), then answers with the
  file names it printed.
- Anything else (codex asks for a thread title with a JSON schema): a short text or JSON.
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

NAMESPACE = "multi_agent_v1"


def _text(content):
    if isinstance(content, str):
        return content
    out = []
    for part in content or []:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            out.append(part["text"])
    return "\n".join(out)


def _items(body, kind):
    return [i for i in body.get("input") or [] if isinstance(i, dict) and i.get("type") == kind]


def _messages(body, role):
    return [i for i in body.get("input") or [] if isinstance(i, dict)
            and i.get("type", "message") == "message" and i.get("role") == role]


def _tool_names(body):
    names = set()
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        if t.get("type") == "namespace":
            names.update(f"{t.get('name')}.{s.get('name')}" for s in t.get("tools") or [])
        else:
            names.add(t.get("name"))
    return names


class Model:
    def __init__(self, scenario, workspace):
        self.scenario = scenario
        self.workspace = workspace
        self.ids = itertools.count(1)

    def _id(self, prefix):
        return f"{prefix}_{next(self.ids):04d}"

    def _call(self, name, args, namespace=None):
        item = {"type": "function_call", "id": self._id("fc"), "call_id": self._id("call"),
                "name": name, "arguments": json.dumps(args), "status": "completed"}
        if namespace:
            item["namespace"] = namespace
        return item

    def _say(self, text):
        return {"type": "message", "id": self._id("msg"), "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}

    def _main(self, body):
        calls = _items(body, "function_call")
        outputs = {o.get("call_id"): o.get("output") for o in _items(body, "function_call_output")}
        said = "\n".join(_text(m.get("content")) for m in _messages(body, "user"))
        said += "\n" + "\n".join(_text(o) if not isinstance(o, str) else o for o in outputs.values())
        tags = sc.spawn_tags(self.scenario)
        spawns = [c for c in calls if c.get("name") == "spawn_agent"]
        if not spawns:
            items = [self._say(sc.main_intro(self.scenario))]
            items += [self._call("spawn_agent", {"message": sc.task_prompt(t)}, NAMESPACE) for t in tags]
            return "spawn", items
        if all(sc.sub_answered(t, said) for t in tags):
            return "done", [self._say(sc.main_done(self.scenario))]
        if self.scenario == "background":
            # Launch and end the turn: codex's children run on their own; the root hears of
            # the result through a <subagent_notification> in a later request, if ever.
            return "wait", [self._say(sc.main_waiting(self.scenario))]
        agent_ids = []
        for c in spawns:
            out = outputs.get(c.get("call_id"))
            try:
                agent_ids.append(json.loads(out)["agent_id"])
            except (TypeError, ValueError, KeyError):
                pass
        waits = [c for c in calls if c.get("name") == "wait_agent"]
        if len(waits) >= 5:
            return "give-up", [self._say(f"MAIN-FAILED {self.scenario}: no answer after {len(waits)} waits")]
        if not agent_ids:
            return "failed", [self._say(f"MAIN-FAILED {self.scenario}: spawn_agent gave no agent id: {list(outputs.values())}")]
        return "wait", [self._call("wait_agent", {"targets": agent_ids, "timeout_ms": 30000}, NAMESPACE)]

    def _child(self, body, tag):
        outputs = _items(body, "function_call_output")
        if outputs:
            text = "\n".join(o.get("output") if isinstance(o.get("output"), str) else _text(o.get("output"))
                             for o in outputs)
            return "answer", [self._say(sc.sub_answer(tag, text))]
        names = _tool_names(body)
        if "exec_command" in names:
            return "tool", [self._call("exec_command", {"cmd": "ls *.txt", "workdir": self.workspace})]
        if "shell" in names:
            return "tool", [self._call("shell", {"command": ["bash", "-lc", "ls *.txt"], "workdir": self.workspace})]
        raise ValueError(f"child {tag} was given no shell tool: {sorted(names)}")

    def plan(self, body):
        for m in _messages(body, "user"):
            text = _text(m.get("content"))
            tag, scen = sc.subagent_in(text), sc.scenario_in(text)
            if tag and body.get("tools"):
                return (f"child {tag}",) + self._child(body, tag)
            if scen and body.get("tools"):
                return ("main",) + self._main(body)
        fmt = ((body.get("text") or {}).get("format")) or {}
        if fmt.get("type") == "json_schema":
            props = (fmt.get("schema") or {}).get("properties") or {}
            return "side", "json", [self._say(json.dumps({k: "Survey text files" for k in props}))]
        return "side", "text", [self._say("Survey text files")]

    def handle(self, req):
        path = req.path.split("?", 1)[0]
        if req.method in ("GET", "HEAD"):
            if path.endswith("/models"):
                return Reply.json({"data": [], "models": []})
            return Reply.json({})
        if not path.endswith("/responses") or not isinstance(req.json, dict):
            return Reply.json({"error": {"message": f"no {path}", "type": "invalid_request_error"}}, status=404)
        body = req.json
        who, step, items = self.plan(body)
        print(f"responses: {who}: {step}", file=sys.stderr)
        delay = sc.child_delay(self.scenario, who.startswith("child") and step == "tool")
        resp_id = self._id("resp")
        model = body.get("model", "stand-in")
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 12, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 22}
        base = {"id": resp_id, "object": "response", "model": model, "status": "in_progress", "output": []}
        events = [("response.created", {"type": "response.created", "response": base})]
        for i, item in enumerate(items):
            if item["type"] == "message":
                shell = dict(item, content=[], status="in_progress")
                events.append(("response.output_item.added", {"type": "response.output_item.added",
                                                              "output_index": i, "item": shell}))
                for piece in re.findall(r"\S+\s*", item["content"][0]["text"]) or [""]:
                    events.append(("response.output_text.delta", {
                        "type": "response.output_text.delta", "item_id": item["id"],
                        "output_index": i, "content_index": 0, "delta": piece}))
            else:
                events.append(("response.output_item.added", {"type": "response.output_item.added",
                                                              "output_index": i, "item": item}))
            events.append(("response.output_item.done", {"type": "response.output_item.done",
                                                         "output_index": i, "item": item}))
        done = dict(base, status="completed", output=items, usage=usage)
        events.append(("response.completed", {"type": "response.completed", "response": done}))
        reply = Reply.sse(events)
        reply.delay = delay
        return reply


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", required=True, choices=sorted(sc.TAGS))
    p.add_argument("--workspace", required=True)
    p.add_argument("--port-file", required=True)
    a = p.parse_args(argv)
    serve(Model(a.scenario, a.workspace).handle, a.port_file, log_name="responses")


if __name__ == "__main__":
    main()
