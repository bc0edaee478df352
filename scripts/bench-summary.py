#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# scripts/bench-summary.py: the Markdown table of a scripts/bench-sitting.sh directory:
# per row, the median of each build's runs, after/before, and every run's value.
#
#   scripts/bench-summary.py OUT BEFORE AFTER
import glob
import json
import os
import platform
import statistics
import sys

# (JSON field, heading, whether more is better)
DECODE = [("decode_tokens_per_s", "decode tok/s", True), ("prefill_tokens_per_s", "prefill tok/s", True)]
SPEC = [("plain_tpot_ms", "plain TPOT ms", False), ("spec_tpot_ms", "spec TPOT ms", False),
        ("verify_over_decode", "verify(k+1)/decode", False)]


def load(out):
    runs = {}  # row -> side -> [json]
    for path in sorted(glob.glob(os.path.join(out, "*.json"))):
        parts = os.path.basename(path)[:-len(".json")].rsplit(".", 2)
        if len(parts) != 3 or parts[1] not in ("before", "after"):
            continue
        try:
            with open(path) as f:
                runs.setdefault(parts[0], {}).setdefault(parts[1], []).append(json.load(f))
        except (OSError, ValueError):
            continue  # a run that failed left no usable JSON; the table shows fewer runs
    return runs


def fmt(v):
    return f"{v:.2f}" if abs(v) < 100 else f"{v:.0f}"


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: bench-summary.py OUT BEFORE AFTER")
    out, before, after = sys.argv[1:]
    runs = load(out)
    print(f"Before: `{before}`; after: `{after}`; machine: {platform.node()}, {os.cpu_count()} CPUs.")
    device = next((j.get("device") for r in runs.values() for s in r.values() for j in s if j.get("device")), None)
    if device:
        print(f"Device: {device}.")
    print()
    print("| row | figure | before (median) | after (median) | after/before | before runs | after runs |")
    print("|---|---|---:|---:|---:|---|---|")
    unmatched = []
    for name in sorted(runs):
        sides = runs[name]
        figures = SPEC if name.startswith("spec") else DECODE
        for field, heading, _ in figures:
            vals = {s: [j[field] for j in sides.get(s, []) if isinstance(j.get(field), (int, float))]
                    for s in ("before", "after")}
            if not vals["before"] or not vals["after"]:
                continue
            b, a = statistics.median(vals["before"]), statistics.median(vals["after"])
            ratio = fmt(a / b) if b else "-"
            print(f"| {name} | {heading} | {fmt(b)} | {fmt(a)} | {ratio} | "
                  f"{', '.join(fmt(v) for v in vals['before'])} | {', '.join(fmt(v) for v in vals['after'])} |")
        for side, js in sides.items():
            if any(j.get("matched") is False for j in js):
                unmatched.append(f"{name} ({side})")
    print()
    print("Commands (MODELS = the models directory of the sitting; each with `--json`):")
    print()
    for path in sorted(glob.glob(os.path.join(out, "*.cmd"))):
        with open(path) as f:
            print(f"- {os.path.basename(path)[:-4]}: `{f.read().strip()}`")
    print()
    if unmatched:
        print("**Speculative output differed from plain decoding in:** " + ", ".join(unmatched))
    else:
        print("Every speculative run matched plain decoding.")


if __name__ == "__main__":
    main()
