#!/usr/bin/env python3
"""Checks the relative links of the repository's Markdown files.

Every link `[text](target)` and `<img src="target">` whose target is not a URL must name a
file or folder that exists, relative to the file that holds it; a `#fragment` must match a
heading of the target (GitHub's anchors: lower case, punctuation dropped, spaces as
hyphens). Links inside code spans and fenced code blocks are ignored.

    python3 scripts/docs/check_links.py [FILE_OR_DIR ...]

With no arguments it checks every Markdown file git tracks (or, outside a git checkout,
README.md, docs/, benches/, examples/ and python/README.md).
Prints one line per broken link and exits 1 when there is any, 0 otherwise.
"""

from __future__ import annotations

import re
import subprocess
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ["README.md", "docs", "benches", "examples", "python/README.md"]

LINK = re.compile(r"(?<!\!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?\s*\)")
SRC = re.compile(r"<img\b[^>]*\bsrc=\"([^\"]+)\"", re.IGNORECASE)
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"<[^>]+>", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.replace("`", "").strip().lower()
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in "-_ " or cat[0] in "LN" or cat == "Mn":
            out.append("-" if ch == " " else ch)
    return "".join(out)


def prose_lines(text: str, keep_code_spans: bool = False):
    """(line number, line) outside fenced code blocks, code spans blanked unless asked."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        marker = re.match(r"(`{3,}|~{3,})", stripped)
        if marker:
            if fence is None:
                fence = marker.group(1)[0] * len(marker.group(1))
                continue
            if stripped.startswith(fence):
                fence = None
                continue
        if fence is not None:
            continue
        yield number, line if keep_code_spans else CODE_SPAN.sub("", line)


_anchors: dict[Path, set[str]] = {}


def anchors(path: Path) -> set[str]:
    if path not in _anchors:
        seen: dict[str, int] = {}
        found = set()
        for _, line in prose_lines(path.read_text(encoding="utf-8"), keep_code_spans=True):
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        # explicit anchors: <a id="..."> / <a name="...">
        for m in re.finditer(r"<a\s+(?:id|name)=\"([^\"]+)\"", path.read_text(encoding="utf-8")):
            found.add(m.group(1))
        _anchors[path] = found
    return _anchors[path]


def check(path: Path) -> list[str]:
    problems = []
    # The prose as one text (fenced blocks blanked, line numbers kept), so that a link whose
    # text runs over two lines is found. Code spans are blanked first, so that `[a](b)`
    # written as code is not a link; a link whose text is a code span keeps its target.
    lines = dict(prose_lines(path.read_text(encoding="utf-8")))
    text = "\n".join(lines.get(i, "") for i in range(1, max(lines, default=0) + 1))
    found = []
    for rx in (LINK, IMAGE, SRC):
        found += [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in rx.finditer(text)]
    for number, target in sorted(found):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
            continue  # http:, https:, mailto:, …
        file_part, _, fragment = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path.resolve()
        where = f"{path.relative_to(ROOT)}:{number}: {target}"
        if not dest.exists():
            problems.append(f"{where}: no such file")
            continue
        if fragment and dest.suffix.lower() == ".md" and dest.is_file():
            if fragment.lower() not in anchors(dest):
                problems.append(f"{where}: no heading #{fragment} in {dest.relative_to(ROOT)}")
    return problems


def markdown_files(args: list[str]) -> list[Path]:
    if not args:
        try:
            listed = subprocess.run(
                ["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True
            ).stdout.split()
            return [ROOT / name for name in listed if (ROOT / name).exists()]
        except (OSError, subprocess.CalledProcessError):
            pass
    files = []
    for arg in args or DEFAULT:
        p = (ROOT / arg) if not Path(arg).is_absolute() else Path(arg)
        if p.is_dir():
            files += sorted(p.rglob("*.md"))
        elif p.exists():
            files.append(p)
    return files


def main() -> int:
    files = markdown_files(sys.argv[1:])
    problems = [problem for f in files for problem in check(f.resolve())]
    for problem in problems:
        print(problem, flush=True)
    print(f"{len(files)} files, {len(problems)} broken links", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
