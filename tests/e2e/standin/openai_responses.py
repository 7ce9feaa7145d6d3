"""A scripted stand-in of the OpenAI Responses API (`POST /v1/responses`, streamed), for codex
(behind codex-acp) pointed at it through a custom model provider.

Each request's `input` items become a `delegation.Conversation` (user messages, the
`function_call`s so far and their `function_call_output`s); the script's answer goes out as
server-sent events: `response.created`, per output item `response.output_item.added`
(`response.output_text.delta` for a message) and `response.output_item.done`, then
`response.completed` with usage. A `Call` whose name the request offers inside a namespace
tool is sent with that `namespace` (codex's multi-agent tools come as the namespace tool
`multi_agent_v1`, and a call to one of them must name it). `GET /v1/models` lists nothing.
"""

import itertools
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from base import Reply, log_turn, run  # noqa: E402
from delegation import Call, Conversation, Result, Text  # noqa: E402


def _text(content):
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in content or []
                     if isinstance(p, dict) and isinstance(p.get("text"), str))


def _output_text(output):
    return output if isinstance(output, str) else _text(output)


def namespaces(body):
    """Tool name → the namespace tool that holds it."""
    out = {}
    for t in body.get("tools") or []:
        if isinstance(t, dict) and t.get("type") == "namespace":
            for sub in t.get("tools") or []:
                out[sub.get("name")] = t.get("name")
    return out


def conversation(body):
    user_texts, calls, results, names = [], [], [], {}
    for item in body.get("input") or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") == "user":
            user_texts.append(_text(item.get("content")))
        elif kind == "agent_message":
            # Multi-agent V2 hands a child its task (and a parent its child's report) as an
            # `agent_message`: a header, then the text as `encrypted_content` (plain here).
            parts = [p.get("text") or p.get("encrypted_content") or ""
                     for p in item.get("content") or [] if isinstance(p, dict)]
            user_texts.append("".join(parts))
        elif kind == "function_call":
            try:
                args = json.loads(item.get("arguments") or "{}")
            except ValueError:
                args = {}
            calls.append((item.get("call_id"), item.get("name"), args))
            names[item.get("call_id")] = item.get("name")
        elif kind == "function_call_output":
            cid = item.get("call_id")
            results.append(Result(cid, names.get(cid), _output_text(item.get("output"))))
    tools = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
    tools += list(namespaces(body))
    fmt = ((body.get("text") or {}).get("format")) or {}
    side = not body.get("tools") or fmt.get("type") == "json_schema"
    conv = Conversation(user_texts, calls, results, tools, side=side,
                        system=body.get("instructions") or "")
    conv.body = body
    return conv


def output_items(items, body, ids):
    spaces = namespaces(body)
    out = []
    for i in items:
        if isinstance(i, Text):
            out.append({"type": "message", "id": f"msg_{next(ids):04d}", "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": i.text, "annotations": []}]})
        else:
            item = {"type": "function_call", "id": f"fc_{next(ids):04d}", "call_id": i.id,
                    "name": i.name, "arguments": json.dumps(i.args), "status": "completed"}
            if i.name in spaces:
                item["namespace"] = spaces[i.name]
            out.append(item)
    return out


def events(out, resp_id, model):
    base = {"id": resp_id, "object": "response", "model": model, "status": "in_progress",
            "output": []}
    ev = [("response.created", {"type": "response.created", "response": base})]
    for ix, item in enumerate(out):
        if item["type"] == "message":
            ev.append(("response.output_item.added", {"type": "response.output_item.added",
                                                      "output_index": ix,
                                                      "item": dict(item, content=[], status="in_progress")}))
            for piece in re.findall(r"\S+\s*", item["content"][0]["text"]) or [""]:
                ev.append(("response.output_text.delta", {"type": "response.output_text.delta",
                                                          "item_id": item["id"], "output_index": ix,
                                                          "content_index": 0, "delta": piece}))
        else:
            ev.append(("response.output_item.added", {"type": "response.output_item.added",
                                                      "output_index": ix, "item": item}))
        ev.append(("response.output_item.done", {"type": "response.output_item.done",
                                                 "output_index": ix, "item": item}))
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 12, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 22}
    ev.append(("response.completed", {"type": "response.completed",
                                      "response": dict(base, status="completed", output=out,
                                                       usage=usage)}))
    return ev


def handler(script, log_dir=None):
    counter = [0]
    ids = itertools.count(1)

    def handle(req):
        path = req.path.split("?", 1)[0]
        if req.method in ("GET", "HEAD"):
            return Reply.json({"data": [], "models": []} if path.endswith("/models") else {})
        if not path.endswith("/responses") or not isinstance(req.json, dict):
            return Reply.json({"error": {"message": f"no {req.method} {path}",
                                         "type": "invalid_request_error"}}, status=404)
        body = req.json
        conv = conversation(body)
        items = script.reply(conv)
        counter[0] += 1
        log_turn(log_dir, counter[0], body, conv, items)
        print(f"responses: #{counter[0]} role={conv.role} tag={conv.tag} side={conv.side} "
              f"results={len(conv.results)} -> {items!r}", file=sys.stderr)
        out = output_items(items, body, ids)
        reply = Reply.sse(events(out, f"resp_{counter[0]:04d}", body.get("model") or "stand-in"))
        reply.delay = script.delay(conv)
        return reply

    return handle


def main(script_class):
    """The entry point of a kit's model.py."""
    run(script_class, handler, "responses")
