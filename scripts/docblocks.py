#!/usr/bin/env python3
"""Run the code blocks of Markdown pages, and keep their pasted outputs true.

A page's ```python blocks run top to bottom in one namespace, in a temporary working directory,
as a reader would run them. A ```output block right after a python block holds what that block
prints; ``tests/test_docs.py`` fails when it differs. ```python no-run blocks are skipped.

Usage::

    python3 scripts/docblocks.py docs/graphs.md           # run; report blocks whose output differs
    python3 scripts/docblocks.py --write docs/graphs.md   # run; paste the real outputs into the page

To add an output to a page, put an empty ```output block after the python block and run
``--write``.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import tempfile
import traceback
from dataclasses import dataclass
from typing import Optional

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`\s]*)\s*(.*)$")


@dataclass
class Block:
    lang: str
    info: str
    line: int  # 1-based line of the first code line
    code: str
    expected: Optional[str] = None  # the ```output block that follows, if any
    out_span: Optional[tuple] = None  # 0-based [first, last) lines of that output block's body


class DocBlockError(Exception):
    """A block raised, or printed something other than its ```output block says."""


def parse_blocks(text: str) -> list:
    """Fenced code blocks in order; an ``output`` block attaches to the python block before it."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang, info = m.groups()
        body, j = [], i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
            j += 1
        if j >= len(lines):
            raise DocBlockError(f"unclosed code fence opened at line {i + 1}")
        code = "\n".join(body) + ("\n" if body else "")
        if lang == "output" and blocks and blocks[-1].lang == "python" and blocks[-1].expected is None:
            blocks[-1].expected = code
            blocks[-1].out_span = (i + 1, j)
        else:
            blocks.append(Block(lang, info, i + 2, code))
        i = j + 1
    return blocks


def normalize(s: str) -> str:
    """Compare outputs modulo trailing spaces and leading/trailing blank lines."""
    return "\n".join(line.rstrip() for line in s.strip("\n").splitlines())


def run_page(path: str, check: bool = True) -> list:
    """Run a page's python blocks; return [(block, printed text)].

    Raises DocBlockError naming ``path:line`` when a block raises, or (with ``check``) when it
    prints something other than its ```output block.
    """
    import numpy as np

    with open(path, encoding="utf-8") as f:
        blocks = [b for b in parse_blocks(f.read()) if b.lang == "python"]
    ns = {"__name__": "__docs__"}
    results = []
    saved_print = np.get_printoptions()
    old_cwd = os.getcwd()
    old_mpl = os.environ.get("MPLBACKEND")
    os.environ["MPLBACKEND"] = "Agg"
    try:
        with tempfile.TemporaryDirectory(prefix="minigraph-docs-") as tmp:
            os.chdir(tmp)
            for b in blocks:
                if "no-run" in b.info.split():
                    continue
                src = "\n" * (b.line - 1) + b.code  # tracebacks point at the page's own lines
                buf = io.StringIO()
                try:
                    with contextlib.redirect_stdout(buf):
                        exec(compile(src, path, "exec"), ns)
                except Exception:
                    raise DocBlockError(f"{path}:{b.line}: code block failed:\n"
                                        f"{traceback.format_exc(limit=-6)}") from None
                got = buf.getvalue()
                if check and b.expected is not None and normalize(got) != normalize(b.expected):
                    raise DocBlockError(f"{path}:{b.line}: the block printed\n{got}\nbut the ```output block "
                                        f"after it says\n{b.expected}\nPaste the real output "
                                        f"(python3 scripts/docblocks.py --write {path}).")
                results.append((b, got))
    finally:
        os.chdir(old_cwd)
        np.set_printoptions(**saved_print)
        if old_mpl is None:
            os.environ.pop("MPLBACKEND", None)
        else:
            os.environ["MPLBACKEND"] = old_mpl
    return results


def write_outputs(path: str) -> int:
    """Replace every ```output block's body with what its python block really prints."""
    results = run_page(path, check=False)
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    changed = 0
    for b, got in sorted(results, key=lambda r: -r[0].line):  # bottom-up keeps spans valid
        if b.out_span is None:
            continue
        first, last = b.out_span
        new = normalize(got).splitlines()
        if lines[first:last] != new:
            lines[first:last] = new
            changed += 1
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return changed


def main(argv: list) -> int:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    write = "--write" in argv
    paths = [os.path.abspath(a) for a in argv if a != "--write"]
    status = 0
    for p in paths:
        try:
            if write:
                n = write_outputs(p)
                print(f"{os.path.relpath(p)}: {n} output block(s) updated")
            else:
                run_page(p)
                print(f"{os.path.relpath(p)}: ok")
        except DocBlockError as e:
            print(e, file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
