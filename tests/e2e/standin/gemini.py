"""A scripted stand-in of the Gemini API (v1beta) for Gemini CLI.

- `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`: server-sent
  `GenerateContentResponse`s, one per part (`text` or `functionCall {name, args}`), the last
  with `finishReason: "STOP"` and `usageMetadata`.
- `POST …:generateContent`: one response with all parts.
- `POST …:countTokens`: `{"totalTokens": N}`.
- JSON side queries (`generationConfig.responseMimeType: application/json`, e.g. "who speaks
  next") get a small JSON object as text.

The scenario comes from a `delegation.Script`; function results come back as
`functionResponse` parts, matched to calls by name and order (Gemini ids are optional).
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from base import Reply, log_turn, run  # noqa: E402
from delegation import CHILD_RE, MAIN_RE, Call, Conversation, Result, Text  # noqa: E402


def _text(parts):
    return "".join(p.get("text", "") for p in parts or [] if isinstance(p, dict))


def conversation(body):
    user_texts, calls, results = [], [], []
    for content in body.get("contents") or []:
        parts = content.get("parts") or []
        role = content.get("role")
        if role == "model":
            for p in parts:
                fc = p.get("functionCall")
                if fc:
                    calls.append((fc.get("id"), fc.get("name"), fc.get("args") or {}))
        else:
            text = _text(parts)
            if text:
                user_texts.append(text)
            for p in parts:
                fr = p.get("functionResponse")
                if fr:
                    results.append(Result(fr.get("id"), fr.get("name"),
                                          json.dumps(fr.get("response"), ensure_ascii=False)))
    system = _text((body.get("systemInstruction") or body.get("system_instruction") or {})
                   .get("parts"))
    # A subagent's task may sit in its system instruction rather than in a user message.
    if not any(CHILD_RE.search(t) or MAIN_RE.search(t) for t in user_texts) and system:
        user_texts = [system] + user_texts
    tools = [d.get("name") for t in body.get("tools") or []
             for d in (t.get("functionDeclarations") or t.get("function_declarations") or [])]
    config = body.get("generationConfig") or body.get("generation_config") or {}
    side = not tools or config.get("responseMimeType") == "application/json"
    return Conversation(user_texts, calls, results, tools, side=side, system=system)


def parts_of(items):
    parts = []
    for item in items:
        if isinstance(item, Text):
            parts.append({"text": item.text})
        elif isinstance(item, Call):
            parts.append({"functionCall": {"name": item.name, "args": item.args}})
    return parts


USAGE = {"promptTokenCount": 20, "candidatesTokenCount": 10, "totalTokenCount": 30}


def response(parts, model, last):
    cand = {"content": {"role": "model", "parts": parts}, "index": 0}
    out = {"candidates": [cand], "modelVersion": model}
    if last:
        cand["finishReason"] = "STOP"
        out["usageMetadata"] = USAGE
    return out


def handler(script, log_dir=None):
    counter = [0]

    def handle(req):
        path = req.path.split("?")[0]
        model, _, action = path.rsplit("/", 1)[-1].partition(":")
        if req.method != "POST" or action not in (
            "streamGenerateContent", "generateContent", "countTokens"
        ):
            return Reply.json({"error": {"code": 404, "message": f"no such endpoint: {path}",
                                         "status": "NOT_FOUND"}}, status=404)
        if action == "countTokens":
            return Reply.json({"totalTokens": 20})
        body = req.json or {}
        conv = conversation(body)
        config = body.get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json":
            items = [Text(json.dumps(script.json_answer(conv, config)))]
        else:
            items = script.reply(conv)
        counter[0] += 1
        log_turn(log_dir, counter[0], body, conv, items, path=req.path)
        print(f"gemini: #{counter[0]} {model}:{action} role={conv.role} tag={conv.tag} "
              f"side={conv.side} results={len(conv.results)} -> {items!r}", file=sys.stderr)
        parts = parts_of(items)
        if action == "generateContent":
            reply = Reply.json(response(parts, model, last=True))
        else:
            reply = Reply.sse([(None, response([p], model, last=i == len(parts) - 1))
                               for i, p in enumerate(parts)])
        reply.delay = script.delay(conv)
        return reply

    return handle


def main(script_class):
    """The entry point of a kit's model.py."""
    run(script_class, handler, "gemini")
