"""A scripted stand-in of the OpenAI chat-completions API (Qwen Code, OpenCode, pi, Kimi,
fast-agent; Mistral Vibe through its Mistral dialect, `whole_calls`).

`POST /v1/chat/completions` is answered from a `delegation.Script`: with `stream: true` as
server-sent `chat.completion.chunk` events (a role chunk, text deltas, per tool call one chunk
with its index, id and name and then the arguments in pieces, the `finish_reason`, a usage
chunk with no choices, `[DONE]`), else as one `chat.completion`. `GET /v1/models` lists the
one model. Anything else (an agent looking up npm packages through a registry pointed here)
gets a 404.

Agents retry an answer they cannot parse, some without limit, so every request gets a
well-formed answer, side requests (titles, summaries, schema classifiers) included.
"""

import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from base import Reply, log_turn, run  # noqa: E402
from delegation import Call, Conversation, Result, Text  # noqa: E402

MODEL = "fake-model"


def content_text(content):
    """The text of a message's `content`: a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def conversation(body):
    messages = body.get("messages") or []
    user_texts, calls, results, names, system = [], [], [], {}, []
    for m in messages:
        role = m.get("role")
        if role in ("system", "developer"):
            system.append(content_text(m.get("content")))
        elif role == "user":
            user_texts.append(content_text(m.get("content")))
        elif role == "assistant":
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function") or {}
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    args = {}
                calls.append((tc.get("id"), fn.get("name"), args))
                names[tc.get("id")] = fn.get("name")
        elif role == "tool":
            cid = m.get("tool_call_id")
            results.append(Result(cid, names.get(cid), content_text(m.get("content"))))
    tools = [(t.get("function") or {}).get("name") for t in body.get("tools") or []]
    side = not tools or "response_format" in body
    return Conversation(user_texts, calls, results, tools, side=side, system="\n".join(system))


def _pieces(text, n=3):
    """Split a string into a few pieces, as a model streams it."""
    step = max(1, -(-len(text) // n))
    return [text[i : i + step] for i in range(0, len(text), step)] or [""]


def chunks(items, model, whole_calls=False):
    """The SSE events of one streamed answer. `whole_calls`: each tool call in one chunk, its
    name and all its arguments (Mistral's API streams them so, and its SDK needs the name in
    every tool-call delta)."""
    cid = f"chatcmpl-{time.monotonic_ns()}"
    created = int(time.time())

    def chunk(delta, finish=None):
        return (None, {"id": cid, "object": "chat.completion.chunk", "created": created,
                       "model": model,
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    events = [chunk({"role": "assistant", "content": ""})]
    index = 0
    for item in items:
        if isinstance(item, Text):
            for word in re.findall(r"\S+\s*", item.text) or [item.text]:
                events.append(chunk({"content": word}))
        elif isinstance(item, Call) and whole_calls:
            events.append(chunk({"tool_calls": [{"index": index, "id": item.id, "type": "function",
                                                 "function": {"name": item.name,
                                                              "arguments": json.dumps(item.args)}}]}))
            index += 1
        elif isinstance(item, Call):
            events.append(chunk({"tool_calls": [{"index": index, "id": item.id, "type": "function",
                                                 "function": {"name": item.name, "arguments": ""}}]}))
            for piece in _pieces(json.dumps(item.args)):
                events.append(chunk({"tool_calls": [{"index": index,
                                                     "function": {"arguments": piece}}]}))
            index += 1
    events.append(chunk({}, "tool_calls" if index else "stop"))
    events.append((None, {"id": cid, "object": "chat.completion.chunk", "created": created,
                          "model": model, "choices": [],
                          "usage": {"prompt_tokens": 10, "completion_tokens": 12,
                                    "total_tokens": 22}}))
    events.append((None, "[DONE]"))
    return events


def completion(items, model):
    """One non-streamed answer."""
    text = " ".join(i.text for i in items if isinstance(i, Text))
    calls = [{"id": i.id, "type": "function",
              "function": {"name": i.name, "arguments": json.dumps(i.args)}}
             for i in items if isinstance(i, Call)]
    message = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return {"id": f"chatcmpl-{time.monotonic_ns()}", "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 12, "total_tokens": 22}}


def handler(script, log_dir=None, whole_calls=False):
    counter = [0]

    def handle(req):
        path = req.path.split("?")[0]
        if req.method == "GET" and path.rstrip("/").endswith("/models"):
            return Reply.json({"object": "list", "data": [
                {"id": MODEL, "object": "model", "created": 0, "owned_by": "stand-in"}]})
        if req.method != "POST" or not path.endswith("/chat/completions"):
            return Reply.json({"error": {"message": f"no such endpoint: {req.method} {path}"}},
                              status=404)
        body = req.json or {}
        conv = conversation(body)
        items = script.reply(conv)
        counter[0] += 1
        log_turn(log_dir, counter[0], body, conv, items)
        print(f"openai-chat: #{counter[0]} role={conv.role} tag={conv.tag} side={conv.side} "
              f"results={len(conv.results)} -> {items!r}", file=sys.stderr)
        model = body.get("model") or MODEL
        reply = Reply.sse(chunks(items, model, whole_calls)) if body.get("stream") else Reply.json(
            completion(items, model))
        reply.delay = script.delay(conv)
        return reply

    return handle


def main(script_class, whole_calls=False):
    """The entry point of a kit's model.py (`whole_calls`: see `chunks`)."""
    run(script_class, lambda script, log_dir: handler(script, log_dir, whole_calls), "openai-chat")
