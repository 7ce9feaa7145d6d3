#!/usr/bin/env python3
"""Turns a proxy dump from an e2e run into a fixture:

    fixture_dump.py DUMP OUT --workspace DIR --home DIR [--cache DIR] [--repo DIR]

- the temp project becomes `/home/user/project`, the agent's home `<home>`, the install
  cache `<cache>` and the checkout `<repo>` (in frames, notes and stderr lines alike);
- a frame holding a string longer than `--max` characters (e.g. Qwen's bundled skill texts in
  `available_commands_update`) is re-serialised with those strings cut to their first 200
  characters plus `…[N chars cut]`; every other frame keeps its exact bytes.
"""

import argparse
import json


def cut(value, limit):
    if isinstance(value, str) and len(value) > limit:
        return value[:200] + f"…[{len(value) - 200} chars cut]"
    if isinstance(value, list):
        return [cut(v, limit) for v in value]
    if isinstance(value, dict):
        return {k: cut(v, limit) for k, v in value.items()}
    return value


def longest(value):
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return max((longest(v) for v in value), default=0)
    if isinstance(value, dict):
        return max((longest(v) for v in value.values()), default=0)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("out")
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--home", required=True)
    ap.add_argument("--cache")
    ap.add_argument("--repo")
    ap.add_argument("--max", type=int, default=2000)
    args = ap.parse_args()
    # Longest first, so a path inside another is replaced after the outer one.
    swaps = sorted(
        [(args.workspace, "/home/user/project"), (args.home, "<home>")]
        + ([(args.cache, "<cache>")] if args.cache else [])
        + ([(args.repo, "<repo>")] if args.repo else []),
        key=lambda s: -len(s[0]),
    )
    cut_frames = 0
    with open(args.dump) as src, open(args.out, "w") as dst:
        for line in src:
            row = json.loads(line)
            frame = row.get("frame")
            if isinstance(frame, str) and len(frame) > args.max:
                try:
                    msg = json.loads(frame)
                except ValueError:
                    msg = None
                if msg is not None and longest(msg) > args.max:
                    row["frame"] = json.dumps(cut(msg, args.max), ensure_ascii=False,
                                              separators=(",", ":"))
                    cut_frames += 1
            text = json.dumps(row, ensure_ascii=False)
            for old, new in swaps:
                text = text.replace(old, new)
            dst.write(text + "\n")
    print(f"fixture_dump: {args.out} ({cut_frames} frames with long strings cut)")


if __name__ == "__main__":
    main()
