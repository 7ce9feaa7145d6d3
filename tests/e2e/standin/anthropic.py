"""A scripted stand-in of the Anthropic Messages API (`POST /v1/messages`, streamed or not), for
Claude Code (inside claude-agent-acp) pointed at it with ANTHROPIC_BASE_URL.

Each request becomes a `delegation.Conversation`; the answer is the script's, as a message
(`stream: false`) or as server-sent events (`message_start`, per block `content_block_start`,
`content_block_delta` (text or input JSON), `content_block_stop`, then `message_delta` and
`message_stop`). `ClaudeCode` is the script for Claude Code: what it needs beyond the
scenarios is listed there.
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from base import Reply, log_turn, run  # noqa: E402
from delegation import Call, Conversation, Result, Script, Text  # noqa: E402

SPAWN_TOOLS = ("Agent", "Task")
HANDBACK = "SubagentHandback"
SUGGESTION = "[SUGGESTION MODE"


def _texts(content):
    """Every text of a message's content, tool results included."""
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


def conversation(body):
    user_texts, calls, results, names = [], [], [], {}
    for m in body.get("messages") or []:
        content = m.get("content")
        blocks = content if isinstance(content, list) else []
        if m.get("role") == "assistant":
            for b in blocks:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    calls.append((b.get("id"), b.get("name"), b.get("input") or {}))
                    names[b.get("id")] = b.get("name")
            continue
        # User messages, and the `system` messages Claude Code >= 2.1.3xx puts in the
        # conversation (a subagent's hand-back comes as one).
        texts = []
        for b in blocks:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                cid = b.get("tool_use_id")
                results.append(Result(cid, names.get(cid), "\n".join(_texts(b.get("content")))))
            elif isinstance(b, dict) and b.get("type") == "text":
                texts.append(b.get("text", ""))
        if isinstance(content, str):
            texts.append(content)
        if texts:
            user_texts.append("\n".join(texts))
    system = body.get("system")
    system = system if isinstance(system, str) else "\n".join(_texts(system))
    tools = [t.get("name") for t in body.get("tools") or []]
    fmt = ((body.get("output_config") or {}).get("format")) or {}
    side = not tools or fmt.get("type") == "json_schema" or "<severity>" in system
    conv = Conversation(user_texts, calls, results, tools, side=side, system=system)
    conv.body = body
    return conv


class ClaudeCode(Script):
    """The scenarios as Claude Code needs them.

    - The spawn tool is `Agent` (`Task` in older builds), whichever the request offers.
    - A child lists the project with `Glob` where it has it (Claude Code 2.1.3xx has none),
      else, and always for `beta`, with `ls` in `Bash`, which asks the client for permission
      in Claude's default mode.
    - Claude Code >= 2.1.3xx offers a child `SubagentHandback`: only a report handed back
      through it reaches the caller, the child's plain last words are dropped.
    - Side requests: a session title (a JSON schema with `title`), the auto mode's security
      classifier (`<severity>N</severity>`, below 50 allows; the first stage stops at
      `</severity>`), and the next-prompt suggestion after a turn (nothing is a fine answer).
    """

    def reply(self, conv):
        self.spawn_tool = next((t for t in SPAWN_TOOLS if t in conv.tools), SPAWN_TOOLS[0])
        last = conv.user_texts[-1] if conv.user_texts else ""
        if last.startswith(SUGGESTION):
            conv.side = True
        return super().reply(conv)

    def spawn(self, tag, background):
        return Call(self.spawn_tool, {
            "description": f"Survey text files ({tag})",
            "prompt": self.task(tag),
            "subagent_type": "general-purpose",
            "run_in_background": background,
        })

    def child_tool(self, tag, conv):
        if tag != "beta" and "Glob" in conv.tools:
            return Call("Glob", {"pattern": "*.txt"})
        return Call("Bash", {"command": "ls *.txt", "description": "List text files"})

    def child_answer(self, tag, answer, conv):
        if HANDBACK in conv.tools and not any(c[1] == HANDBACK for c in conv.calls):
            return [Text(answer), Call(HANDBACK, {"message": answer})]
        return [Text(answer)]

    def side(self, conv):
        body = getattr(conv, "body", {})
        fmt = ((body.get("output_config") or {}).get("format")) or {}
        if fmt.get("type") == "json_schema":
            props = (fmt.get("schema") or {}).get("properties") or {}
            return [Text(json.dumps({k: "Survey text files" for k in props}))]
        if "<severity>" in conv.system:
            if "</severity>" in (body.get("stop_sequences") or []):
                return [Text("<severity>3")]
            return [Text("<severity>3</severity>")]
        if conv.user_texts and conv.user_texts[-1].startswith(SUGGESTION):
            return [Text("")]
        return [Text("OK")]


def _stop(items, body):
    if any(isinstance(i, Call) for i in items):
        return "tool_use", None
    text = "".join(i.text for i in items if isinstance(i, Text))
    if "</severity>" in (body.get("stop_sequences") or []) and not text.endswith("</severity>"):
        return "stop_sequence", "</severity>"
    return "end_turn", None


def _blocks(items):
    out = []
    for i in items:
        if isinstance(i, Text):
            out.append({"type": "text", "text": i.text})
        else:
            out.append({"type": "tool_use", "id": i.id.replace("call_", "toolu_"),
                        "name": i.name, "input": i.args})
    return out


def events(blocks, msg_id, model, stop, stop_sequence):
    usage = {"input_tokens": 10, "output_tokens": 1,
             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    out = [("message_start", {"type": "message_start", "message": {
        "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": usage}})]
    for ix, b in enumerate(blocks):
        if b["type"] == "text":
            out.append(("content_block_start", {"type": "content_block_start", "index": ix,
                                                "content_block": {"type": "text", "text": ""}}))
            for piece in re.findall(r"\S+\s*", b["text"]):
                out.append(("content_block_delta", {"type": "content_block_delta", "index": ix,
                                                    "delta": {"type": "text_delta", "text": piece}}))
        else:
            start = dict(b, input={})
            out.append(("content_block_start", {"type": "content_block_start", "index": ix,
                                                "content_block": start}))
            out.append(("content_block_delta", {"type": "content_block_delta", "index": ix,
                                                "delta": {"type": "input_json_delta",
                                                          "partial_json": json.dumps(b["input"])}}))
        out.append(("content_block_stop", {"type": "content_block_stop", "index": ix}))
    out.append(("message_delta", {"type": "message_delta",
                                  "delta": {"stop_reason": stop, "stop_sequence": stop_sequence},
                                  "usage": {"output_tokens": 12}}))
    out.append(("message_stop", {"type": "message_stop"}))
    return out


def handler(script, log_dir=None):
    counter = [0]

    def handle(req):
        path = req.path.split("?", 1)[0]
        if req.method in ("GET", "HEAD"):
            return Reply.json({})  # Claude Code's reachability check
        if path.endswith("/count_tokens"):
            return Reply.json({"input_tokens": 10})
        if not path.endswith("/v1/messages") or not isinstance(req.json, dict):
            return Reply.json({"type": "error", "error": {"type": "not_found_error",
                                                          "message": f"no {req.method} {path}"}},
                              status=404)
        body = req.json
        conv = conversation(body)
        items = script.reply(conv)
        counter[0] += 1
        log_turn(log_dir, counter[0], body, conv, items)
        print(f"anthropic: #{counter[0]} role={conv.role} tag={conv.tag} side={conv.side} "
              f"results={len(conv.results)} -> {items!r}", file=sys.stderr)
        model = body.get("model") or "claude-stand-in"
        msg_id = f"msg_{counter[0]:04d}"
        blocks = _blocks(items)
        stop, stop_sequence = _stop(items, body)
        if body.get("stream"):
            reply = Reply.sse(events(blocks, msg_id, model, stop, stop_sequence))
        else:
            reply = Reply.json({"id": msg_id, "type": "message", "role": "assistant",
                                "model": model, "content": blocks, "stop_reason": stop,
                                "stop_sequence": stop_sequence,
                                "usage": {"input_tokens": 10, "output_tokens": 12}})
        reply.delay = script.delay(conv)
        return reply

    return handle


def main(script_class):
    """The entry point of a kit's model.py."""
    run(script_class, handler, "anthropic")
