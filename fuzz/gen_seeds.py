#!/usr/bin/env python3
"""Regenerate the checked-in seed corpus (fuzz/corpus-seed/<target>/) and the engine dictionary.

Seeds are small, named by what they exercise; the fuzzers' own corpora (fuzz/corpus/) are not
checked in."""
import json, os

here = os.path.dirname(os.path.abspath(__file__))
seed = os.path.join(here, "corpus-seed")

def put(target, name, data):
    with open(os.path.join(seed, target, name), "wb") as f:
        f.write(data)

# Framing: first byte = frame limit - 1, next 8 = chunk sizes - 1, then the stream.
put("framing", "lines-crlf-blank", bytes([63]) + bytes([0, 2, 5, 1, 7, 3, 0, 9]) + b'{"a":1}\n\r\n{"b":2}\r\n\nlast')
put("framing", "oversized", bytes([7]) + bytes([3] * 8) + b"x" * 40 + b"\nok\n" + b"y" * 20)
put("framing", "one-chunk", bytes([15, 255, 255, 255, 255, 255, 255, 255, 255]) + b"abc\n" * 10)
put("framing", "nul-invalid-utf8", bytes([31, 0, 0, 0, 0, 0, 0, 0, 0]) + b"\x00\xff\xfe\n{\"x\":\"\x00\"}\n")

# Envelope: frames as they come.
for name, line in [
    ("request", b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'),
    ("notification", b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{}}}\n'),
    ("response", b'{"jsonrpc":"2.0","id":"x","result":{}}\r\n'),
    ("error", b'{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"m"}}\n'),
    ("escapes", b'{"id":"a\\/b","method":"m\\u0065","params":{"n":1.0e3}}\n'),
    ("batch", b'[{"jsonrpc":"2.0","id":1,"method":"x"}]\n'),
    ("garbage", b'{broken\n'),
    ("invalid-utf8", b'\xff\xfe\n'),
    ("dup-keys", b'{"id":1,"id":2,"method":"a","method":"b"}\n'),
    ("null-id", b'{"jsonrpc":"2.0","id":null,"result":null}\n'),
]:
    put("envelope", name, line)
fixtures = os.path.join(here, "..", "..", "shared", "fixtures")
if os.path.isdir(fixtures):
    for fx in sorted(os.listdir(fixtures)):
        if fx.endswith(".jsonl"):
            with open(os.path.join(fixtures, fx)) as f:
                for n, rec in enumerate(f):
                    if n % 7 == 0 and rec.strip():
                        msg = json.loads(rec)["msg"]
                        put("envelope", f"{fx[:-6]}-{n}", (json.dumps(msg, separators=(",", ":")) + "\n").encode())

# Engine: flags byte, then ops of [op, session, tool, parent-tool, extra...]. See fuzz/src/lib.rs.
S1, S2, K1 = 0, 1, 2
T0, T1, T2, T3, C0, C1, C2 = 0, 1, 2, 3, 4, 5, 6
TAG, BIT6 = 0x80, 0x40
def op(code, s=S1, t=T0, p=T0, *extra):
    return bytes([code, s, t, p, *extra])

legacy = b"\x00" + b"".join([
    op(12, S1, 0, 0, 5),                 # prompt id 5
    op(0, S1, T0), op(1, S1, T0),        # spawn t0 + refined
    op(0, S1, T1), op(1, S1, T1),        # spawn t1
    op(4),                               # parent chunk
    op(2 | TAG, S1, C0, T0),             # child tool of t0
    op(8, S1, C1),                       # permission before its tool call (held)
    op(2 | TAG, S1, C1, T1),             # child tool of t1: releases it
    op(3, S1, C0, 0, 3),                 # post-hook update without parent id
    op(4 | TAG, S1, 0, T1),              # child text
    op(0 | TAG, S1, T2, T0),             # nested spawn in t0's child
    op(2 | TAG, S1, C2, T2),             # grandchild tool
    op(5, S1, T1), op(5, S1, T0),        # completions
    op(13 | BIT6, S1, 0, 0, 0, 6),       # load child t0
    op(18 | BIT6, S1, 0, 0, 1),          # cancel child t1
    op(10, S1, 0, 0, 5),                 # prompt answered
    op(20, S1, 0, 0, 200),               # time passes
])
standard = b"\x00" + b"".join([
    op(12, S1, 0, 0, 7),
    op(6, S1, T0, 0, 0),                 # subagent_update k1 running
    op(7, S1, 7),                        # session_message task
    op(4, K1), op(2, K1, C0), op(8, K1, C0),
    op(6 | BIT6, S1, T0, 0, 1),          # idle end_turn, cancel capability
    op(11, S1, 0, 0, 7),
    op(16, S1, 0, 0, 9), op(11, S1, 0, 0, 9),  # session/list filtered
    op(13 | BIT6, S1, 0, 0, 2, 3),
])
late = b"\x01" + b"".join([
    op(2 | TAG, S1, C0, T0),             # child event before its spawn
    op(0, S1, T0), op(5, S1, T0), op(5, S1, T0),   # spawn completed twice
    op(15, S1, 0, 0, 0, 4),              # close parent
    op(4 | TAG, S1, 0, T0),              # child event after close
    op(13, S1, 0, 0, 3),                 # parent load without agent support
    op(12 | BIT6, S1, 0, 0, 4, 2),       # prompt a child
    op(13 | BIT6, S1, 0, 0, 4, 8),       # load a child id never given
    op(25, S1, T3),
])
raw = b"\x00" + op(22) + b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t0","title":"Task","_meta":{"claudeCode":{"toolName":"Agent"}}}}}\n' \
    + op(23) + b'\x00\xff garbage {\n' + op(24) + b'{"sessionUpdate":"subagent_update"}\n'
# Hostile agents. KIDS = k1, k2, s1, s2, k3, s_new; SESSIONS = s1, s2, k1; a pick byte
# chooses modulo the list's length.
KID_K1, KID_K2, KID_S1, KID_S2, KID_K3, KID_NEW = range(6)
RUNNING, IDLE = 0, 1
hostile_ids = b"\x00" + b"".join([
    op(26, S1, 0, 0, KID_K1, RUNNING),           # k1 on s1
    op(26, S2, 0, 0, KID_K1, IDLE),              # k1 again, on s2 (one id, two parents)
    op(26, S1, 0, 0, KID_S1, RUNNING),           # s1 as its own child
    op(26, S1, 0, 0, KID_S2, RUNNING),           # s2, a top-level session, as s1's child
    op(4, S1), op(4, S2), op(4, K1),             # each session's own words
    op(26 | TAG, S1, 0, 0, KID_K2, KID_K1, RUNNING),   # k2 inside k1
    op(26 | TAG, S1, 0, 0, KID_K1, KID_K2, IDLE),      # k1 inside k2: a cycle
    op(26 | TAG, S1, 0, 0, KID_K2, KID_K2, IDLE),      # k2 inside itself
    op(4, K1),
])
hostile_deep = b"\x00" + b"".join([
    op(27, S1, T0, 0, 63),                       # 1008 standard levels
    op(29, S1, T1, 0, 63),                       # 1008 legacy levels
    op(4, S1),
])
hostile_cards = b"\x00" + b"".join([
    op(0, S1, T0), op(1, S1, T0),                # a real spawn (child id 0 of the list)
    op(28 | BIT6, S1, T1, 0, 0),                 # a card on a plain tool call naming its own session
    op(28 | BIT6, S1, T2, 0, 1, 1),              # naming s2
    op(28 | BIT6, S1, T3, 0, 2, 0),              # naming the proxy's child of t0
    op(28, S1, T3, 0, 1, 0),                     # a spawn-shaped card naming s1
    op(28, S1, C0, 0, 3),                        # naming a child another link may own
    op(28 | TAG, S1, C0, 0, 3),                  # its update
    op(28, S1, C1, 0, 3),                        # ... and another card for the same id
    op(13 | BIT6, S1, 0, 0, 0, 4),               # load a child id never given
])
early = b"\x00" + b"".join([
    op(30, S1, 0, 0, 9, 0, KID_NEW),             # session/new 9, terminal/create for s_new
    op(30, S1, 0, 0, 10, 2, KID_S1),             # another, permission for s1 (known)
    op(31, S1, 0, 0, 9),                         # answered: s_new
    op(30, S1, 0, 0, 11, 1, KID_NEW),            # fs read for s_new, known now
])
for name, data in [("legacy-subagents", legacy), ("standard-subagents", standard),
                   ("late-and-odd", late), ("raw-lines", raw),
                   ("hostile-ids-and-cycles", hostile_ids), ("hostile-deep-nesting", hostile_deep),
                   ("hostile-cards", hostile_cards), ("requests-before-session-new", early)]:
    put("engine", name, data)

words = ["sessionUpdate", "tool_call", "tool_call_update", "agent_message_chunk", "user_message_chunk",
         "subagent_update", "session_message", "subagent_spawned", "subagent_state_update",
         "_meta", "claudeCode", "parentToolUseId", "toolName", "Agent", "Task", "toolCallId",
         "sessionId", "subagentSessionId", "recipientSessionId", "senderSessionId", "messageId",
         "status", "completed", "failed", "in_progress", "rawInput", "prompt", "description",
         "subagent_type", "state", "idle", "running", "stopReason", "end_turn", "cancelled",
         "capabilities", "cancel", "subagent_session_info", "parentToolCallId", "jsonrpc", "2.0",
         "method", "params", "id", "result", "error", "session/update", "session/request_permission",
         "session/load", "session/prompt", "session/cancel", "toolCall", "content", "text",
         "toolResponse", "isAsync", "s1", "k1", "t0", "s2", "k2", "s_new", "tool_name",
         "session_id", "message_start_index", "terminal/create", "fs/read_text_file", "session/new"]
with open(os.path.join(here, "engine.dict"), "w") as f:
    for w in words:
        f.write('"\\"%s\\""\n' % w)
    for tok in ["{", "}", "[", "]", ":", ",", "null", "true", "false", "\\x0a"]:
        f.write('"%s"\n' % tok)
