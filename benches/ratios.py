#!/usr/bin/env python3
"""Print the ratios of one `cargo bench --bench codec` run as Markdown tables.

Reads criterion's results (`<criterion dir>/**/new/benchmark.json` and `estimates.json`),
pairs each `ours` benchmark with the `kafka-protocol` and `memcpy` ones of the same group
and case, and checks the targets:

- parse + walk (`parse_walk/*`): kafka-protocol time / ours time >= 10 on every case;
- parse only of the large request (`parse/request`, `large-*`): >= 100;
- encode (`encode/*`): >= 5;
- walking every partition of the large request (`walk_partitions/request`, `ours`): at
  least half the speed of copying the frame (memcpy time / ours time >= 0.5).

A last table puts the one-pass walk (`ours-visit`) and `encode_exact` (`ours-exact`) next
to kafka-protocol, the read and chase floors and memcpy of the same run (no target: the
floors' targets are instruction counts, from benches/icount_table.sh).

Usage:
    python3 benches/ratios.py [CRITERION_DIR] [--stat median|mean|slope] [--check]

CRITERION_DIR defaults to $CARGO_TARGET_DIR/criterion, else target/criterion. `--check`
exits with status 1 when a target is missed. Python 3 standard library only.
"""

import argparse
import json
import os
import sys
from pathlib import Path

OURS, OURS_UTF8, KP, COPY = "ours", "ours+utf8", "kafka-protocol", "memcpy"

# (group, title, target ratio of kafka-protocol time to ours, cases the target covers)
PEER_GROUPS = [
    ("parse/request", "parse", 100.0, ("large-",)),
    ("parse/response", "parse", None, ()),
    ("parse_walk/request", "parse + walk", 10.0, ("",)),
    ("parse_walk/response", "parse + walk", 10.0, ("",)),
    ("encode/request", "encode", 5.0, ("",)),
    ("encode/response", "encode", 5.0, ("",)),
    ("reemit/request", "re-emit a parsed view", None, ()),
    ("reemit/response", "re-emit a parsed view", None, ()),
]
WALK_GROUP = "walk_partitions/request"
WALK_TARGET = 0.5
STREAM_GROUPS = ["split/stream", "scan/stream", "scan/capture"]
CASE_ORDER = ["reference-v2", "typical-v0", "typical-v2", "large-v0", "large-v2"]


def load(root, stat):
    """{(group, function, case): (seconds per iteration, bytes per iteration)}"""
    results = {}
    for meta_path in root.glob("**/new/benchmark.json"):
        meta = json.loads(meta_path.read_text())
        estimates = json.loads((meta_path.parent / "estimates.json").read_text())
        estimate = estimates.get(stat) or estimates["mean"]
        seconds = estimate["point_estimate"] / 1e9
        throughput = meta.get("throughput") or {}
        size = throughput.get("Bytes") or throughput.get("BytesDecimal")
        key = (meta["group_id"], meta["function_id"], meta["value_str"])
        results[key] = (seconds, size)
    return results


def fmt_time(seconds):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def fmt_speed(seconds, size):
    if not size:
        return ""
    rate = size / seconds
    for unit, scale in (("GiB/s", 2**30), ("MiB/s", 2**20), ("KiB/s", 2**10)):
        if rate >= scale:
            return f"{rate / scale:.3g} {unit}"
    return f"{rate:.3g} B/s"


def fmt_ratio(r):
    return f"{r:.3g}×" if r < 1000 else f"{r:,.0f}×"


def case_key(case):
    return (CASE_ORDER.index(case) if case in CASE_ORDER else len(CASE_ORDER), case)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_root = Path(os.environ.get("CARGO_TARGET_DIR", "target")) / "criterion"
    parser.add_argument("root", nargs="?", type=Path, default=default_root)
    parser.add_argument("--stat", choices=["median", "mean", "slope"], default="median")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    args = parser.parse_args()

    results = load(args.root, args.stat)
    if not results:
        sys.exit(f"no criterion results under {args.root}: run `cargo bench --bench codec` first")
    missed = []

    def get(group, function, case):
        return results.get((group, function, case))

    print(f"Times are criterion's {args.stat} per iteration; ratio = kafka-protocol time / ours "
          "time (higher is better for us); vs copy = memcpy time / ours time (1 = as fast as "
          "copying the frame); with UTF-8 checks = kafka-protocol time / `ours+utf8` time "
          "(our walk also checks every string is UTF-8, as kafka-protocol's decode does).\n")
    print("| operation | message | case | bytes | ours | kafka-protocol | ratio | target "
          "| ours vs copy | ratio with UTF-8 checks |")
    print("|---|---|---|---:|---:|---:|---:|---|---:|---:|")
    for group, title, target, covered in PEER_GROUPS:
        kind = group.split("/")[1]
        cases = sorted({c for g, f, c in results if g == group and f == OURS}, key=case_key)
        for case in cases:
            ours = get(group, OURS, case)
            kp = get(group, KP, case)
            copy = get(group, COPY, case)
            utf8 = get(group, OURS_UTF8, case)
            ratio = kp[0] / ours[0] if kp else None
            goal = ""
            if target is not None and any(case.startswith(p) for p in covered):
                met = ratio is not None and ratio >= target
                goal = f"≥ {target:g}× {'met' if met else '**missed**'}"
                if not met:
                    missed.append(f"{group} {case}: {fmt_ratio(ratio or 0)} < {target:g}×")
            print(
                f"| {title} | {kind} | {case} | {ours[1] or ''} "
                f"| {fmt_time(ours[0])} ({fmt_speed(*ours)}) "
                f"| {fmt_time(kp[0]) if kp else ''} "
                f"| {fmt_ratio(ratio) if ratio else ''} | {goal} "
                f"| {fmt_ratio(copy[0] / ours[0]) if copy else ''} "
                f"| {fmt_ratio(kp[0] / utf8[0]) if kp and utf8 else ''} |"
            )

    walk_cases = sorted({c for g, f, c in results if g == WALK_GROUP}, key=case_key)
    if walk_cases:
        print("\nWalking every partition id of the large request (`partitions().iter()`), "
              "against copying the same frame:\n")
        print("| case | bytes | ours: parse + sum | ours: sum only (parsed view) | memcpy "
              f"| parse + sum vs copy | target |")
        print("|---|---:|---:|---:|---:|---:|---|")
        for case in walk_cases:
            ours = get(WALK_GROUP, OURS, case)
            only = get(WALK_GROUP, "ours-walk-only", case)
            copy = get(WALK_GROUP, COPY, case)
            if not (ours and copy):
                continue
            speed = copy[0] / ours[0]
            met = speed >= WALK_TARGET
            if not met:
                missed.append(f"{WALK_GROUP} {case}: {speed:.3g} of copy speed < {WALK_TARGET}")
            cells = [f"{fmt_time(t[0])} ({fmt_speed(*t)})" if t else "" for t in (ours, only, copy)]
            print(f"| {case} | {ours[1]} | {' | '.join(cells)} | {speed:.3g} "
                  f"| ≥ {WALK_TARGET} {'met' if met else '**missed**'} |")

    # The single-pass visitors and the known-length encoder, against the peer and the
    # floors of the same run (times; benches/icount_table.sh has the instruction counts).
    floor_rows = [(g, c) for g, f, c in results if f in ("ours-visit", "ours-exact")]
    if floor_rows:
        print("\nAgainst the floors (times, same run): parse + walk in one pass (`visit_*`), "
              "and `encode_exact` (length known):\n")
        print("| operation | message | case | bytes | ours (views) | ours (one pass) "
              "| kafka-protocol | read floor | chase floor | memcpy | kafka-protocol / one pass "
              "| one pass / chase floor | one pass / read floor | one pass / memcpy |")
        print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for group in ("parse_walk/request", "parse_walk/response", "encode/request",
                      "encode/response"):
            fast = "ours-visit" if group.startswith("parse_walk") else "ours-exact"
            for case in sorted({c for g, c in floor_rows if g == group}, key=case_key):
                t = {f: get(group, f, case)
                     for f in (OURS, fast, KP, "read-floor", "chase-floor", COPY)}
                one = t[fast]
                if not one:
                    continue

                def cell(x):
                    return fmt_time(x[0]) if x else ""

                def over(x):
                    return fmt_ratio(one[0] / x[0]) if x else ""

                kp_ratio = fmt_ratio(t[KP][0] / one[0]) if t[KP] else ""
                print(f"| {'parse + walk' if fast == 'ours-visit' else 'encode'} "
                      f"| {group.split('/')[1]} | {case} | {one[1] or ''} "
                      f"| {' | '.join(cell(t[f]) for f in (OURS, fast, KP, 'read-floor', 'chase-floor', COPY))} "
                      f"| {kp_ratio} | {over(t['chase-floor'])} | {over(t['read-floor'])} "
                      f"| {over(t[COPY])} |")

    rows = [(g, f, c) for g, f, c in results if g in STREAM_GROUPS]
    if rows:
        print("\nStreams (no target):\n")
        print("| operation | case | bytes | peer | time | throughput | peer time / ours time |")
        print("|---|---|---:|---|---:|---:|---:|")
        for group in STREAM_GROUPS:
            for case in sorted({c for g, f, c in rows if g == group}):
                ours = get(group, OURS, case)
                peers = sorted(f for g, f, c in rows if g == group and c == case)
                peers.sort(key=lambda f: f != OURS)
                for function in peers:
                    t = get(group, function, case)
                    ratio = fmt_ratio(t[0] / ours[0]) if ours and function != OURS else ""
                    print(f"| {group} | {case} | {t[1] or ''} | {function} | {fmt_time(t[0])} "
                          f"| {fmt_speed(*t)} | {ratio} |")

    print()
    if missed:
        print("Targets missed:\n")
        for m in missed:
            print(f"- {m}")
    else:
        print("Every target met.")
    if args.check and missed:
        sys.exit(1)


if __name__ == "__main__":
    main()
