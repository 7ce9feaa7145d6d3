#!/usr/bin/env python3
"""The matrix of `scripts/e2e.sh --latest`: per kit, the pinned and the newest version and the
verdict of every check over all its runs, read from the e2e test binary's output.

    latest_matrix.py RUN_LOG UNFOLLOWED < "kit pinned newest" lines

A check is `ok` when no run of the kit failed it, `FAIL` when one did, `known` when only known
bugs (kits.rs) failed it, `-` when no run got far enough to check anything. `run` is the runs'
own verdict (a run that could not even start fails only there). Kits whose report is missing
(the test binary died first) say so.
"""

import re
import sys

CHECKS = ["run", "zed-model", "cards", "child-prompt", "child-thread", "indices",
          "parent-clean", "main-text", "delivered-once", "reopen", "dump", "close", "turn"]
HEADER = re.compile(r"^== e2e (\S+) \(")
VERDICT = re.compile(r"^(ok|KNOWN-BUG|FAIL) ")
FAILED = re.compile(r"^    \[([\w-]+)\] ")
KNOWN = re.compile(r"^    known bug \[([\w-]+)\] ")


def reports(log):
    """Kit → {check: verdict} from the kits' reports in the log."""
    out, kit = {}, None
    for line in log:
        line = line.rstrip("\n")
        m = HEADER.match(line)
        if m:
            kit = m.group(1)
            out[kit] = {c: "ok" for c in CHECKS}
            continue
        if kit is None:
            continue
        seen = out[kit]
        if VERDICT.match(line):
            if "(live " in line:
                seen["_ran"] = "yes"
            if line.startswith("FAIL"):
                seen["run"] = "FAIL"
            elif line.startswith("KNOWN-BUG") and seen["run"] == "ok":
                seen["run"] = "known"
        elif m := FAILED.match(line):
            seen[m.group(1)] = "FAIL"
        elif m := KNOWN.match(line):
            if seen.get(m.group(1), "ok") == "ok":
                seen[m.group(1)] = "known"
        elif line.startswith(("test ", "thread '", "failures:")):
            # The kit's report is over (a failed run's error may span lines of its own).
            kit = None
    return out


def main():
    with open(sys.argv[1], errors="replace") as f:
        found = reports(f)
    rows = [line.strip().split(None, 2) for line in sys.stdin if line.strip()]
    with open(sys.argv[2]) as f:
        skipped = [line.strip().split(None, 2) for line in f if line.strip()]
    # A check the list above does not name yet still gets its column.
    checks = CHECKS + sorted({c for v in found.values() for c in v} - set(CHECKS) - {"_ran"})
    head = ["agent", "pinned", "newest"] + checks
    table = [head]
    for kit, pinned, newest in rows:
        verdicts = found.get(kit)
        if verdicts is None:
            table.append([kit, pinned, newest, "no report"] + [""] * (len(checks) - 1))
        else:
            ran = verdicts.get("_ran") == "yes"
            table.append([kit, pinned, newest, verdicts["run"]]
                         + [verdicts.get(c, "ok") if ran else "-" for c in checks[1:]])
    for kit, pinned, note in skipped:
        table.append([kit, pinned, note] + [""] * len(checks))
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


if __name__ == "__main__":
    main()
