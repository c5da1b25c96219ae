"""Type-check every Python code block of README.md and docs/*.md with mypy.

    python scripts/typecheck_docs.py

Each page's blocks run top to bottom in one namespace (as tests/test_docs.py runs them), so a
page becomes one module. Exit status is mypy's.
"""
from __future__ import annotations

import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from docblocks import parse_blocks  # noqa: E402


def pages() -> list[pathlib.Path]:
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def module_source(page: pathlib.Path) -> str:
    """The page's python blocks, one after another, each starting on its own line of the page."""
    lines: list[str] = []
    for block in parse_blocks(page.read_text()):
        if block.lang != "python":
            continue
        lines += [""] * max(0, block.line - len(lines))  # mypy's line numbers are the page's
        lines += block.code.splitlines()
    return "\n".join(lines) + "\n"


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for page in pages():
            src = module_source(page)
            if src.strip():
                path = pathlib.Path(tmp) / f"{page.stem.replace('-', '_')}_md.py"
                path.write_text(src)
                files.append(str(path))
        r = subprocess.run([sys.executable, "-m", "mypy", "--ignore-missing-imports", "--no-error-summary",
                            "--follow-imports=silent", "--allow-redefinition", *files], cwd=ROOT, capture_output=True, text=True)
        out = r.stdout.replace(tmp + "/", "")
        for page in pages():
            out = out.replace(f"{page.stem.replace('-', '_')}_md.py", str(page.relative_to(ROOT)))
        sys.stdout.write(out)
        sys.stderr.write(r.stderr)
        print(f"mypy on the code blocks of {len(files)} pages: exit {r.returncode}")
        return r.returncode


if __name__ == "__main__":
    raise SystemExit(main())
