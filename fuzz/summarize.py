#!/usr/bin/env python3
"""Summarize fuzz campaign logs (fuzz/logs/TARGET-RUNS.log, written by fuzz/campaign.sh)
as Markdown table rows: target, executions, seconds, exec/s, cov, ft, corpus after cmin,
crashes.

    python3 fuzz/summarize.py fuzz/logs/*.log
"""
import re
import sys

print("| target | executions | time (s) | exec/s | cov | ft | corpus after cmin | crashes | options |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
for path in sys.argv[1:]:
    text = open(path, errors="replace").read()
    target = re.search(r"# target=(\S+) runs=(\d+) exit=(\d+) seconds=(\d+)", text)
    if not target:
        continue
    name, runs, status, seconds = target.groups()
    # The last status line of the run itself (before cmin's own output).
    done = re.findall(r"#(\d+)\s+DONE\s+cov: (\d+) ft: (\d+) corp: (\d+)", text)
    execs, cov, ft, _ = done[0] if done else ("?", "?", "?", "?")
    merged = re.findall(r"MERGE-OUTER: (\d+) new files with (\d+) new features added; (\d+) new coverage", text)
    corpus = merged[-1][0] if merged else "?"
    crashes = "0" if status == "0" else "1 (see log)"
    running = re.search(r"Running `\S+ (.*?)`", text)
    options = " ".join(
        o for o in (running.group(1).split() if running else []) if o.startswith(("-max_len", "-max_total_time"))
    )
    sanitizer = re.search(r"sanitizer=(\S+)", text)
    if sanitizer and sanitizer.group(1) != "address":
        options = (options + f" (sanitizer {sanitizer.group(1)})").strip()
    rate = int(execs) // max(int(seconds), 1) if execs.isdigit() else "?"
    print(f"| {name} | {int(execs):,} | {seconds} | {rate:,} | {cov} | {ft} | {corpus} | {crashes} | {options} |")
