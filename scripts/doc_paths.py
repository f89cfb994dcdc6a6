#!/usr/bin/env python3
"""Every repository path the docs name exists.

    scripts/doc_paths.py          check; exit 1 naming each missing path

Reads README.md, ARCHITECTURE.md, scripts/README.md, loadtests/README.md
and docs/*.md (not loadtests/JOURNAL.md: a journal records what was, by
its date) and takes every `code span` that starts with a top-level
directory of the repository (crates/, services/, scripts/, docs/, …) as a
path: it must exist, as a file or a directory. Spans with placeholders
(`<name>`, `*`, `{…}`, `…`) or spaces are not paths; a `:line` or `#anchor`
suffix is dropped. A path git ignores (an output directory) may be absent.
"""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ["README.md", "ARCHITECTURE.md", "scripts/README.md", "loadtests/README.md"]


def top_dirs():
    return {p.name for p in ROOT.iterdir() if p.is_dir() and p.name not in {"target", "node_modules", ".git"}}


def ignored(path):
    """Whether git ignores `path` (an output directory the docs name)."""
    return subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT).returncode == 0


def spans(text):
    # Fenced blocks are examples (commands, output), not references.
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.findall(r"`([^`\n]+)`", text)


def main():
    tops = top_dirs()
    files = [ROOT / d for d in DOCS if (ROOT / d).exists()] + sorted((ROOT / "docs").glob("*.md"))
    missing = []
    checked = 0
    for doc in files:
        for span in spans(doc.read_text()):
            path = span.strip()
            if any(c in path for c in "<>*{}… $=|,()'\"") or "/" not in path:
                continue
            path = re.sub(r"[:#].*$", "", path)
            first = path.split("/")[0]
            if first not in tops:
                continue
            checked += 1
            if not (ROOT / path).exists() and not ignored(path):
                missing.append(f"{doc.relative_to(ROOT)}: `{span}` does not exist")
    for m in missing:
        print(f"doc paths: {m}", file=sys.stderr)
    if not missing:
        print(f"doc paths: ok ({checked} paths named by {len(files)} documents exist)")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
