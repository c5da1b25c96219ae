"""Fill the measured tables of docs/performance.md from benchmarks/results/*.json.

Regions between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->`` are replaced by a
``text`` block rendered from the JSON files, so the page shows exactly what the last recorded
run printed: ``python benchmarks/docs_tables.py [--results benchmarks/results] [--doc docs/performance.md]``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "benchmarks"

from . import compile_time, depthwise_cpu, executor_overhead  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(results: str, name: str):
    path = os.path.join(results, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def _machine(m: dict) -> str:
    cpu = m.get("lscpu", {})
    lines = [f"CPU      {cpu.get('Model name', '?')}, {m.get('cores')} cores "
             f"({cpu.get('Thread(s) per core', '?')} thread per core), SIMD: {cpu.get('Flags', '?')}",
             f"caches   L1d {cpu.get('L1d cache', '?')}, L2 {cpu.get('L2 cache', '?')}, L3 {cpu.get('L3 cache', '?')}",
             f"python   {m.get('python')}   numpy {m.get('numpy')} ({m.get('blas')})",
             f"peers    torch {m.get('torch', '-')}   jax {m.get('jax', '-')}   mlx {m.get('mlx', '-')}",
             f"platform {m.get('platform')}"]
    if "load_average" in m:
        la = m["load_average"]
        lines.append(f"load     {la[0]:.1f} / {la[1]:.1f} / {la[2]:.1f} (1/5/15-min load average at the end of the run)")
    return "\n".join(lines)


def _summary_line(res: dict, key: str) -> str:
    s = res["summary"][key]
    gm, gmin = s["geomean_ratio_to_torch"], s["geomean_ratio_to_torch_min"]
    parts = [f"geomean minigraph/torch: {gm['minigraph']:.2f} (medians), {gmin['minigraph']:.2f} (minima)"]
    for peer in ("jax", "mlx"):
        if peer in s.get("minigraph_speedup_over", {}):
            parts.append(f"minigraph is {s['minigraph_speedup_over'][peer]:.1f}x faster than {peer} (geomean)")
    return "; ".join(parts)


def regions(results: str) -> dict:
    out = {}
    dw = _load(results, "depthwise_cpu.json")
    if dw:
        out["machine"] = _machine(dw["machine"])
        for op in ("wgrad", "fwd", "dgrad"):
            if any(r["op"] == op for r in dw["results"]):
                out[f"dw-{op}"] = depthwise_cpu.report(dw, ops=(op,), notes=False) + "\n" + \
                    _summary_line(dw, f"{op}/mobilenet_v2")
    t1 = _load(results, "depthwise_cpu_1thread.json")
    if t1:
        out["dw-1thread"] = "\n".join(
            [depthwise_cpu.report(t1, notes=False)] +
            [f"{k}: " + _summary_line(t1, k) for k in t1["summary"]])
    v3 = _load(results, "depthwise_cpu_v3_effnet.json")
    if v3:
        out["dw-v3-effnet"] = depthwise_cpu.report(v3, notes=False) + "\n" + "\n".join(
            f"{k}: " + _summary_line(v3, k) for k in v3["summary"])
    ex = _load(results, "executor_overhead.json")
    if ex:
        ex = dict(ex)
        ex.pop("profile", None)
        out["executor"] = executor_overhead.report(ex)
    ct = _load(results, "compile_time.json")
    if ct:
        out["compile"] = compile_time.report(ct)
    return out


def fill(doc_text: str, regs: dict) -> str:
    for name, body in regs.items():
        pat = re.compile(rf"(<!-- bench:{re.escape(name)} -->\n).*?(<!-- /bench:{re.escape(name)} -->)", re.S)
        doc_text = pat.sub(lambda m: m.group(1) + "```text\n" + body.rstrip() + "\n```\n" + m.group(2), doc_text)
    return doc_text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", default=os.path.join(ROOT, "benchmarks", "results"))
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "performance.md"))
    a = ap.parse_args(argv)
    with open(a.doc) as f:
        text = f.read()
    regs = regions(a.results)
    new = fill(text, regs)
    with open(a.doc, "w") as f:
        f.write(new)
    print(f"filled {sorted(regs)} in {a.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
