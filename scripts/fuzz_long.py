#!/usr/bin/env python3
"""Long fuzzing run: the generators of tests/fuzz_strategies.py, for a long budget.

    python3 scripts/fuzz_long.py                       # 10,000 cases: 5,000 valid graphs, 5,000 invalid calls
    python3 scripts/fuzz_long.py --cases 40000 --seed 7
    python3 scripts/fuzz_long.py --minutes 20 --backends numpy
    python3 scripts/fuzz_long.py --replay valid:0:123  # print (and check) one case: kind:seed:index

Case ``i`` of seed ``s`` is drawn from ``random.Random("s:kind:i")``, so every case can be replayed.
Prints counts per category: valid graphs run, backend comparisons (and cases a backend declined,
with why), ops covered, invalid calls per kind, errors by class. Every failure is printed with a
standalone reproducer (run it from the repository root) and saved under ``--out``. Exit status 1
when anything failed.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import re
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

import fuzz_strategies as fs  # noqa: E402
import minigraph as mg  # noqa: E402


def make_case(kind: str, seed: int, i: int):
    d = fs.RandomDraw(f"{seed}:{kind}:{i}")
    return fs.gen_valid(d) if kind == "valid" else fs.gen_invalid(d)


def run_case(kind: str, p, backends, stats) -> None:
    if kind == "valid":
        fs.run_valid_source(p.source(), backends, stats)
    else:
        fs.run_invalid_source(p.source(), stats)


def _signature(kind: str, p, e: BaseException) -> str:
    what = getattr(p, "kind", "") if p is not None else "generator"
    return re.sub(r"\d+", "#", f"{kind} {what} | {type(e).__name__}: {e}")[:160]


def main(argv=None) -> int:
    args = _parse_args(argv)
    backends = [b for b in args.backends.split(",") if b]
    if args.replay:
        return _replay(args.replay, backends)
    tally = _run_cases(args, backends)
    _report(args, backends, tally)
    _report_failures(args, backends, tally.failures)
    return 1 if tally.failures else 0


def _parse_args(argv) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=10000, help="total cases (half valid, half invalid)")
    ap.add_argument("--minutes", type=float, default=None, help="stop after this long instead")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backends", default=",".join(mg.available_backends()),
                    help="comma-separated backends for valid graphs (default: all available)")
    ap.add_argument("--valid-share", type=float, default=0.5)
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "minigraph_fuzz_failures"),
                    help="where reproducers are written")
    ap.add_argument("--verbose", action="store_true", help="list every invalid-call kind")
    ap.add_argument("--replay", default=None, help="kind:seed:index of one case to print and check")
    return ap.parse_args(argv)


def _replay(case_id: str, backends) -> int:
    kind, seed, i = case_id.split(":")
    p = make_case(kind, int(seed), int(i))
    print(fs.reproducer(p, backends, invalid=kind != "valid"))
    run_case(kind, p, backends, {})
    print(f"# {case_id}: ok")
    return 0


@dataclasses.dataclass
class _Tally:
    """What a long run counted."""

    stats: dict = dataclasses.field(default_factory=dict)
    ops: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    invalid_kinds: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    failures: dict = dataclasses.field(default_factory=collections.OrderedDict)  # signature -> [(case id, p, traceback)]
    counts: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    declined_why: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    cases: int = 0
    elapsed: float = 0.0


def _run_cases(args, backends) -> _Tally:
    """Run cases until ``--cases`` or ``--minutes`` is used up, valid and invalid interleaved."""
    tally = _Tally()
    t0 = time.time()
    deadline = t0 + 60 * args.minutes if args.minutes else None
    n_valid = n_invalid = 0
    i = 0
    while _more(i, args.cases, deadline):
        kind = "valid" if (n_valid < args.valid_share * (i + 1)) else "invalid"
        _run_one(args, backends, tally, kind, n_valid if kind == "valid" else n_invalid)
        if kind == "valid":
            n_valid += 1
        else:
            n_invalid += 1
        i += 1
        if i % 1000 == 0:
            print(f"... {i} cases, {time.time() - t0:.0f} s, {sum(len(v) for v in tally.failures.values())} failures",
                  flush=True)
    tally.cases = i
    tally.elapsed = time.time() - t0
    return tally


def _more(i: int, cases: int, deadline) -> bool:
    """Whether to run case ``i``: before the deadline with ``--minutes``, else while ``i < --cases``."""
    return time.time() <= deadline if deadline is not None else i < cases


def _run_one(args, backends, tally: _Tally, kind: str, index: int) -> None:
    """Draw case ``index`` of ``kind``, run it, and count it (a failure is recorded, never raised)."""
    p = None
    try:
        p = make_case(kind, args.seed, index)
        if kind == "valid":
            tally.ops.update(p.ops_used)
        else:
            tally.invalid_kinds[p.kind] += 1
        before = dict(tally.stats.get("declined", {}))
        run_case(kind, p, backends, tally.stats)
        for b, k in tally.stats.get("declined", {}).items():
            if k != before.get(b, 0):
                tally.declined_why[_declined_reason(p, b)] += 1
        tally.counts[kind] += 1
    except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the run
        sig = _signature(kind, p, e)
        tally.failures.setdefault(sig, []).append((f"{kind}:{args.seed}:{index}", p, traceback.format_exc()))
        tally.counts[kind + " failed"] += 1


def _report(args, backends, tally: _Tally) -> None:
    """The counts: graphs run, backend comparisons and declines, ops covered, invalid-call kinds."""
    stats, counts = tally.stats, tally.counts
    print(f"\n== minigraph long fuzz: seed {args.seed}, backends {backends}, {tally.cases} cases in {tally.elapsed:.1f} s ==")
    print(f"valid graphs run:        {counts['valid']} ok, {counts['valid failed']} failed")
    print(f"backend comparisons:     {stats.get('compared', 0)}  "
          + ", ".join(f"{b}: {k}" for b, k in sorted(stats.get("by_backend", {}).items())))
    for b, k in sorted(stats.get("declined", {}).items()):
        print(f"  declined by {b}:       {k} (a clean KernelMissingError/BackendUnavailableError)")
    for why, k in tally.declined_why.most_common(8):
        print(f"    {k:6d}  {why}")
    print(f"invalid calls:           {counts['invalid']} ok, {counts['invalid failed']} failed")
    print("errors by class:         " + ", ".join(f"{c}: {k}" for c, k in
                                             sorted(stats.get("errors", {}).items(), key=lambda kv: -kv[1])))
    _report_coverage(tally.ops)
    print("invalid-call kinds:")
    groups: collections.Counter = collections.Counter()
    for k, v in tally.invalid_kinds.items():
        groups[_group(k)] += v
    print("  " + ", ".join(f"{k} {v}" for k, v in sorted(groups.items(), key=lambda kv: -kv[1])))
    if args.verbose:
        print("  in detail: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.invalid_kinds.items(), key=lambda kv: -kv[1])))


def _report_coverage(ops: collections.Counter) -> None:
    public = [o for o in mg.ops.OPS if not mg.ops.OPS[o].internal]
    print(f"ops covered ({len([o for o in ops if o in public])} of {len(public)} op types, plus assign and read):")
    print("  " + ", ".join(f"{o} {k}" for o, k in ops.most_common()))
    missing = sorted(o for o in mg.ops.OPS if not mg.ops.OPS[o].internal and o not in ops)
    if missing:
        print(f"  not generated: {missing}")


def _report_failures(args, backends, failures: dict) -> None:
    """Each distinct failure once, with a standalone reproducer (also written under ``--out``)."""
    nfail = sum(len(v) for v in failures.values())
    print(f"failures:                {nfail} in {len(failures)} distinct signatures")
    if failures:
        os.makedirs(args.out, exist_ok=True)
    for sig, cases in failures.items():
        print(f"\n--- [{len(cases)}x] {sig}")
        case_id, p, tb = cases[0]
        print(tb.rstrip().splitlines()[-1])
        if p is None:
            print(tb)
            continue
        path = os.path.join(args.out, case_id.replace(":", "_") + ".py")
        src = fs.reproducer(p, backends, invalid=case_id.startswith("invalid"))
        with open(path, "w") as f:
            f.write(src)
        print(f"reproducer ({case_id}; also in {path}; "
              f"or: python3 scripts/fuzz_long.py --replay {case_id}):")
        print(src)


def _group(kind: str) -> str:
    """'bad slice length' -> 'bad slice'; 'conv family: x_gradient case' -> 'conv family: x_gradient'."""
    if kind.startswith("conv family"):
        return kind.rsplit(" ", 1)[0]
    words = kind.split(" ")
    for stop in ("via", "on", "shape", "dtype", "length", "type"):
        if stop in words[1:]:
            return " ".join(words[:words.index(stop, 1)]) or kind
    return " ".join(words[:3]) if kind.startswith(("late", "huge", "feed", "bad")) else kind


def _declined_reason(p, backend: str) -> str:
    ns = fs._exec(p.source())
    try:
        fs.run_mode(ns, backend)
    except fs.DECLINED as e:
        return re.sub(r"'[^']*'", "'…'", f"{backend}: {e}")[:110]
    except Exception:  # noqa: BLE001
        pass
    return f"{backend}: ?"


if __name__ == "__main__":
    sys.exit(main())
