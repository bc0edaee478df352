#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# scripts/gpu-sitting-summary.py OUT: the Markdown summary of a sitting of scripts/gpu-sitting.sh
# (stdout). Reads the JSON each step left in OUT and puts every figure next to the command
# that produced it, with the ratios the GPU issue sets goals for: matmul at the device copy
# bandwidth, decode against llama.cpp, decode at long context against short, and the counts of
# one decode step. A step that failed or left no JSON is listed as such, never guessed.
import json
import os
import sys


def load(out, name):
    try:
        with open(os.path.join(out, name + ".json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fmt(x, digits=2):
    return "-" if x is None else f"{x:.{digits}f}"


def ratio(a, b):
    return a / b if a and b else None


def verdict(x, goal):
    return f"{goal}: {'met' if x is not None and x >= goal else 'not met'}"


def yes_no(v):
    return {True: "yes", False: "no"}.get(v, "-")


def controller_summary(out, steps):
    """Issue 40's rows: speculation with the defaults only against plain decoding (goal: 0.97 or
    more in every row) and, at forced acceptance 0.7, against the best fixed length (goal: 95%)."""
    names = [n for n, _, _, _ in steps if n.startswith("ctrl-")]
    if not names:
        return
    p = print
    p("## Speculation by default: the goodput controller (issue 40)")
    p()
    p("| row | matched | acceptance | rounds | plain steps | default / plain | against its own plain steps | goal |")
    p("|---|---|---|---|---|---|---|---|")
    for drafter in ("mtp", "gemma"):
        for a in ("0", "0.3", "0.7"):
            name = f"ctrl-{drafter}-a{a}"
            if name not in names:
                continue
            j = load(out, name)
            if not j:
                p(f"| {name} | (step failed) | | | | | | |")
                continue
            s = j.get("speedup_decode")
            own = j.get("speedup_vs_own_plain_steps")
            spec = j.get("spec", {})
            p(f"| {name} | {yes_no(j.get('matched'))} | {fmt(j.get('acceptance_rate'))} | {spec.get('rounds', '-')} | "
              f"{spec.get('plain_steps', '-')} | {fmt(s, 3)} | {fmt(own, 3)} | {verdict(s, 0.97)} |")
        fixed = {k: load(out, f"ctrl-{drafter}-a0.7-k{k}") for k in (1, 2, 3)}
        fixed = {k: j.get("speedup_decode") for k, j in fixed.items() if j and j.get("speedup_decode")}
        default = load(out, f"ctrl-{drafter}-a0.7")
        if fixed and default and default.get("speedup_decode"):
            k, best = max(fixed.items(), key=lambda kv: kv[1])
            share = default["speedup_decode"] / best
            each = ", ".join(f"k = {kk}: {fmt(v, 3)}" for kk, v in sorted(fixed.items()))
            p(f"| {drafter}, 0.7: default / best fixed (k = {k}; {each}) | | | | | {fmt(share, 3)} | | "
              f"{verdict(share, 0.95)} |")
    demo = load(out, "ctrl-demo") if "ctrl-demo" in names else None
    if demo:
        s = demo.get("speedup")
        p(f"| ctrl-demo (ngram-simple, repeating model) | {yes_no(demo.get('same_tokens'))} | "
          f"{fmt(demo.get('acceptance_rate'))} | | | {fmt(s, 3)} | | {verdict(s, 0.97)} |")
    serve = load(out, "ctrl-serve-mtp") if "ctrl-serve-mtp" in names else None
    for level in (serve or {}).get("levels", []):
        s = level.get("speedup_median")
        p(f"| ctrl-serve-mtp, {level.get('concurrency')} streams (median of {level.get('pairs')} pairs, "
          f"{fmt(level.get('speedup_min'), 3)}..{fmt(level.get('speedup_max'), 3)}) | | | | | {fmt(s, 3)} | | "
          f"{verdict(s, 0.97)} |")
    if "ctrl-serve-mtp" in names and not serve:
        p("| ctrl-serve-mtp | (step failed) | | | | | | |")
    p()
    p("default / plain: `speedup_decode` of `bench spec --bracket` (each prompt's plain decode before and")
    p("after its speculative one), `speedup` of `tandem demo`, the median pair of `bench serve --vs-plain`;")
    p("against its own plain steps: `speedup_vs_own_plain_steps`, where the run took 8 plain steps or more.")
    p()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gpu-sitting-summary.py OUT")
    out = sys.argv[1]
    steps = []
    with open(os.path.join(out, "steps.tsv")) as f:
        for line in f:
            name, rc, secs, cmd = line.rstrip("\n").split("\t", 3)
            steps.append((name, int(rc), int(secs), cmd.strip()))
    commands = {s[0]: s[3] for s in steps}
    p = print

    p("# GPU sitting")
    p()
    try:
        with open(os.path.join(out, "version.txt")) as f:
            p("```\n" + f.read().strip() + "\n```")
    except OSError:
        pass
    devices = load(out, "devices")
    if devices:
        picked = [d for d in devices.get("devices", []) if d.get("selected")] or devices.get("devices", [])[:1]
        for d in picked:
            p(f"Device: **{d.get('name', '?')}** (driver {d.get('driver_version', d.get('driver', '?'))}).")
    p()

    # ---- matmul against the device copy bandwidth
    ops = [n for n, _, _, _ in steps if n.startswith("ops-")]
    if ops:
        p("## Mat-vec on large matrices (bench ops, kernel time from device timestamps)")
        p()
        p("| matrix | type | batch | wall ms | kernel ms | kernel GB/s | device copy GB/s | fraction of copy |")
        p("|---|---|---|---|---|---|---|---|")
    copy_gb_s = None
    for name in ops:
        j = load(out, name)
        if not j:
            p(f"| {name[4:]} | (step failed) | | | | | | |")
            continue
        copy_gb_s = j.get("device_copy", {}).get("gb_per_s")
        for r in j.get("matmul", []):
            p(f"| {name[4:]} | {r['type']} | {r['batch']} | {fmt(r['ms'], 3)} | {fmt(r.get('gpu_ms'), 3)} | "
              f"{fmt(r.get('gpu_gb_per_s'), 1)} | {fmt(copy_gb_s, 1)} | {fmt(r.get('fraction_of_copy_bandwidth'))} |")
    if ops:
        p()
        p("Goal: batch-1 kernels at 0.75 of the device copy bandwidth or more.")
        p()

    # ---- decode
    decode_steps = [n for n, _, _, _ in steps if n.startswith("decode-") and n != "decode-profile"]
    if decode_steps:
        p("## Plain decode (bench decode)")
        p()
        p("| model | context | decode tok/s | ms/token | weights/token MiB | fraction of limit | dispatches/step | "
          "barriers/step | host-memory dispatches/step |")
        p("|---|---|---|---|---|---|---|---|---|")
    decode = {}
    for name in decode_steps:
        model, ctx = name[len("decode-"):].rsplit("-ctx", 1)
        j = load(out, name)
        decode[(model, int(ctx))] = j
        if not j:
            p(f"| {model} | {ctx} | (step failed) | | | | | | |")
            continue
        p(f"| {model} | {ctx} | {fmt(j['decode_tokens_per_s'], 1)} | {fmt(j['decode_ms_per_token'], 3)} | "
          f"{fmt(j['weight_bytes_per_token'] / 2**20, 0)} | {fmt(j.get('fraction_of_limit'))} | "
          f"{j.get('step_dispatches', '-')} | {j.get('step_barriers', '-')} | "
          f"{j.get('step_host_memory_dispatches', '-')} |")
    if decode_steps:
        p()
    models = sorted({m for m, _ in decode})
    if models:
        p("Long context against short (goal: at most 1.3):")
        p()
        for m in models:
            ctxs = sorted(c for mm, c in decode if mm == m)
            if len(ctxs) >= 2:
                short, long_ = decode[(m, ctxs[0])], decode[(m, ctxs[-1])]
                r = ratio(long_ and long_["decode_ms_per_token"], short and short["decode_ms_per_token"])
                p(f"- {m}: ms/token at {ctxs[-1]} over {ctxs[0]}: {fmt(r)}")
        p()

    # ---- llama.cpp side by side
    llama_rows = [(n, load(out, n)) for n, _, _, _ in steps if n.startswith("llama-")]
    if llama_rows:
        p("## Against llama.cpp (llama-bench -ngl 99 -p 0 -n 128, same files)")
        p()
        p("| model | llama.cpp tg128 tok/s | tandem decode tok/s (short context) | tandem / llama.cpp | "
          "tandem tuned tok/s | tuned / llama.cpp |")
        p("|---|---|---|---|---|---|")
        for name, j in llama_rows:
            model = name[len("llama-"):]
            tg = None
            if isinstance(j, list):
                for r in j:
                    if r.get("n_gen") and not r.get("n_prompt"):
                        tg = r.get("avg_ts")
            ours = [v for (m, c), v in sorted(decode.items()) if m == model and v]
            mine = ours[0]["decode_tokens_per_s"] if ours else None
            tuned = [v for (m, c), v in sorted(decode.items()) if m == model + "+tuned" and v]
            mine_t = tuned[0]["decode_tokens_per_s"] if tuned else None
            p(f"| {model} | {fmt(tg, 1)} | {fmt(mine, 1)} | {fmt(ratio(mine, tg))} | {fmt(mine_t, 1)} | "
              f"{fmt(ratio(mine_t, tg))} |")
        p()
        p("Goal: tandem at 1.2x llama.cpp's tg128 or more on the Qwen3-0.6B and Gemma 4 E2B shapes.")
        p()

    # ---- speculative
    spec = [(n, load(out, n)) for n, _, _, _ in steps if n.startswith("spec-")]
    if spec:
        p("## Speculative decoding, forced acceptance (bench spec)")
        p()
        p("| run | matched | acceptance | tokens/target pass | plain TPOT ms | spec TPOT ms | speedup (decode) | "
          "verify/decode | draft step/target step | draft pass/target step |")
        p("|---|---|---|---|---|---|---|---|---|---|")
        for name, j in spec:
            if not j:
                p(f"| {name} | (step failed) | | | | | | | | |")
                continue
            p(f"| {name} | {j.get('matched', '-')} | {fmt(j.get('acceptance_rate'))} | "
              f"{fmt(j.get('tokens_per_target_pass'))} | {fmt(j.get('plain_tpot_ms'), 3)} | "
              f"{fmt(j.get('spec_tpot_ms'), 3)} | {fmt(j.get('speedup_decode'))} | "
              f"{fmt(j.get('verify_over_decode'))} | {fmt(j.get('draft_token_over_decode'), 3)} | "
              f"{fmt(j.get('draft_round_over_decode'), 3)} |")
        p()

    # ---- where one decode step's time goes: the last pass of the profiled run
    last = None
    try:
        with open(os.path.join(out, "decode-profile.jsonl")) as f:
            for line in f:
                if line.strip():
                    last = json.loads(line)
    except (OSError, ValueError):
        pass
    if last:
        p(f"## Where one decode step's time goes (last pass of decode-profile: {fmt(last['gpu_us'], 1)} us on the GPU)")
        p()
        by_op = {}
        for n in last["nodes"]:
            by_op.setdefault(n.get("op", n["kernels"][0]), [0, 0.0])
            by_op[n.get("op", n["kernels"][0])][0] += 1
            by_op[n.get("op", n["kernels"][0])][1] += n["us"]
        p("| op | nodes | us | share |")
        p("|---|---|---|---|")
        for op, (count, us) in sorted(by_op.items(), key=lambda kv: -kv[1][1]):
            p(f"| {op} | {count} | {fmt(us, 1)} | {fmt(us / last['gpu_us'] if last['gpu_us'] else None)} |")
        p()
        p("| slowest nodes | op | weight | workgroups | us | GB/s |")
        p("|---|---|---|---|---|---|")
        for n in sorted(last["nodes"], key=lambda n: -n["us"])[:12]:
            p(f"| {n.get('name', '')} (node {n.get('node', '-')}) | {n.get('op', '')} | {n.get('weight_type', '')} | {n['workgroups'][0]} | "
              f"{fmt(n['us'], 1)} | {fmt(n.get('gb_per_s'), 1)} |")
        p()

    controller_summary(out, steps)

    tunes = [n for n, _, _, _ in steps if n.startswith("tune")]
    if tunes:
        p("## Work splits chosen by `tandem tune` (kernel time per batch-1 matmul)")
        p()
        p("| step | kernel and shape | split | default | us | default us | speedup | GB/s |")
        p("|---|---|---|---|---|---|---|---|")
        for name in tunes:
            j = load(out, name)
            if not j:
                p(f"| {name} | (step failed) | | | | | | |")
                continue
            for r in j.get("shapes", []):
                p(f"| {name} | {r['key']} | {r.get('split', '-')} | {r.get('default_split', '-')} | "
                  f"{fmt(r.get('us'), 2)} | {fmt(r.get('default_us'), 2)} | {fmt(r.get('speedup'))} | "
                  f"{fmt(r.get('gb_per_s'), 1)} |")
        p()
    elif ops:
        p("Tuning: this build has no `tandem tune`.")
        p()

    p("## Steps")
    p()
    p("| step | exit | seconds | command |")
    p("|---|---|---|---|")
    for name, rc, secs, cmd in steps:
        p(f"| {name} | {rc} | {secs} | `{cmd}` |")
    p()
    p("The per-op GPU profile of one decode run is in logs/decode-profile.err, and every pass of it")
    p("node by node in decode-profile.jsonl.")


if __name__ == "__main__":
    main()
