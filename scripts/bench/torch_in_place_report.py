"""The report of torch_in_place.py: per scenario, the table of its columns (p50, min-max,
ratio, steps redone, pids kept, runs ok), the in-place phase breakdown, and the targets.

    sc = Scenario(key, title, columns, fn)      # sc.results[column]: one dict per run
    p50, ok, problems = report_faults(sc, label, runs)
    p50, problems = report_overhead(sc, label, runs)
    for line in targets(sc, p50, ok): ...       # "target ...: met" or "... MISSED"

A run's dict: "total" (s) when it got there, else "error" (a muster run failed) or "none"
(a torchrun did not recover); the other keys are torch_in_place.py's. Scenario and the
pieces every scenario benchmark's report shares are in bench_scenarios.py.
"""
from bench_scenarios import fmt, med, print_block, print_failures, print_header, span, target_line

IN_PLACE_PHASES = (("pause", "pause (paused_ms)"), ("leave", "leave"), ("wait", "wait"),
                   ("group", "group"), ("state", "state"), ("ddp", "ddp"),
                   ("survivor", "survivor total"), ("muster", "muster total_ms"),
                   ("join", "join (group+state+ddp)"))


def succeeded(sc):
    """{column: its runs that got there (with a "total")}."""
    return {c: [r for r in sc.results[c] if "total" in r] for c in sc.columns}


def failures(sc, label, c, cells):
    """print_failures for column c (the torchrun's are reported, not problems)."""
    return print_failures(sc, label, c, [r for r in sc.results[c] if "total" not in r], cells,
                          fatal=c != "torchrun")


def report_faults(sc, label, runs):
    """The tables of a fault scenario; returns (p50 per column, problems)."""
    problems = []
    print_header(sc, label, runs)
    ok = succeeded(sc)
    base = med([r["total"] for r in ok.get("in-place", [])])
    what = "joiner stepping" if sc.key == "node-join" else "stepping again"
    print(f"| column | {what} p50 | min–max | / in place | steps redone p50 (max) | "
          "survivors' pids kept | runs ok |")
    print("|---|---|---|---|---|---|---|")
    for c in sc.columns:
        t = [r["total"] for r in ok[c]]
        ratio = f"{med(t) / base:.1f}x" if t and base else "—"
        redone = [r["redone"] for r in ok[c]]
        kept = (sum(r["kept"][0] for r in ok[c]), sum(r["kept"][1] for r in ok[c]))
        print(f"| {label[c]} | {fmt(med(t))} | {span(t)} | {ratio} | "
              + (f"{med(redone):g} ({max(redone)})" if redone else "—")
              + f" | {kept[0]}/{kept[1]} | {len(t)}/{len(sc.results[c])} |")
        problems += failures(sc, label, c, 7)
    inplace = [c for c in sc.columns if c.startswith("in-place") and ok[c]]
    if inplace:
        print("\nin-place phase breakdown, medians over runs (per run: the slowest survivor's line, "
              "the slowest agent's event, the slowest replacement/joiner):\n")
        print(f"| column | {what} | " + " | ".join(lbl for _, lbl in IN_PLACE_PHASES) + " |")
        print("|---|---|" + "---|" * len(IN_PLACE_PHASES))
        for c in inplace:
            cells = [fmt(med([r[k] for r in ok[c] if r.get(k) is not None])) for k, _ in IN_PLACE_PHASES]
            print(f"| {label[c]} | {fmt(med([r['total'] for r in ok[c]]))} | " + " | ".join(cells) + " |")
    extra = []
    for c in sc.columns:
        fallbacks = sorted({f for r in ok[c] for f in r.get("fallbacks", [])})
        joins = sorted({j for r in ok[c] for j in r.get("joins", [])})
        if c.startswith("in-place"):
            extra.append(f"{label[c]}: event=in_place_join (survivors, restarted): {joins or 'none'}; "
                         f"fallbacks: {fallbacks or 'none'}")
            if fallbacks:
                problems.append(f"{sc.key}: {label[c]}: an in-place recovery fell back ({fallbacks})")
        resumed = sorted({r["resumed"] for r in ok[c]})
        if resumed:
            extra.append(f"{label[c]}: first step of the new generation: {resumed}")
    for key in ("victim", "joined", "problem"):
        seen = sorted({r[key] for c in sc.columns for r in ok[c] if r.get(key)})
        if seen:
            extra.append(f"{key}: " + " | ".join(seen))
            if key == "problem":
                problems += [f"{sc.key}: {p}" for p in seen]
    if sc.key == "node-join":
        for c in sc.columns:
            for key, text in (("all", "all 6 ranks stepping (from the generation line)"),
                              ("stall", "longest pause of a running rank (last step before -> first after)"),
                              ("gen_after_start", "joiner started -> its generation line"),
                              ("warm_ready_before_gen", "joiner's event=warm_ready -> its generation line "
                                                        "(negative: warm process ready after)")):
                values = [r[key] for r in ok[c] if r.get(key) is not None]
                if values:
                    extra.append(f"{label[c]}: {text}: p50 {fmt(med(values))} ({span(values)})")
    print_block(extra)
    return {c: med([r["total"] for r in ok[c]]) for c in sc.columns}, ok, problems


def report_overhead(sc, label, runs):
    problems = []
    print_header(sc, label, runs)
    ok = succeeded(sc)
    base = med([r["total"] for r in ok.get("plain", [])])
    print("| column | step interval p50 (median of runs) | min–max | mean step | / plain | runs ok |")
    print("|---|---|---|---|---|---|")
    for c in sc.columns:
        t = [r["total"] for r in ok[c]]
        ratio = f"{med(t) / base:.3f}x" if t and base else "—"
        print(f"| {label[c]} | {fmt(med(t), 'ms')} | {span(t, 'ms')} | "
              f"{fmt(med([r['mean'] for r in ok[c]]), 'ms')} | {ratio} | {len(t)}/{len(sc.results[c])} |")
        problems += failures(sc, label, c, 6)
    module = med([r["total"] for r in ok.get("module", [])])
    return ({"overhead": module / base - 1} if module and base else {}), problems


def targets(sc, p50, ok):
    inplace = ok.get("in-place", [])
    lines = []
    if sc.key == "worker-kill" and p50.get("in-place") is not None:
        lines.append(target_line("in place stepping again p50 <= 0.3 s", p50["in-place"] <= 0.3,
                                 fmt(p50["in-place"])))
        worst = max(r["redone"] for r in inplace)
        lines.append(target_line("in place <= 1 step redone (every run)", worst <= 1, f"at most {worst}"))
        kept = all(r["kept"][0] == r["kept"][1] for r in inplace)
        lines.append(target_line("in place survivors' pids unchanged (every run)", kept,
                                 "yes" if kept else "no"))
    elif sc.key == "agent-kill" and p50.get("in-place") is not None:
        lines.append(target_line("in place 4 survivors stepping p50 <= 0.6 s", p50["in-place"] <= 0.6,
                                 fmt(p50["in-place"])))
    elif sc.key == "node-join" and p50.get("in-place") is not None:
        lines.append(target_line("joiner stepping p50 <= 0.5 s", p50["in-place"] <= 0.5,
                                 fmt(p50["in-place"])))
    elif sc.key == "overhead" and "overhead" in p50:
        lines.append(target_line("module overhead <= 2 %", p50["overhead"] <= 0.02,
                                 f"{p50['overhead'] * 100:+.2f} %"))
    return lines
