#!/usr/bin/env python3
"""Docs that point at the code: every repository path written in backticks in README.md, docs/
and the code's comments exists, and every docs/DESIGN.md section a comment or page cites is a
heading of DESIGN.md. Run by CTest as `docs_paths`; prints each dangling reference with its file
and line, and exits 1 if there is any.

A backticked word counts as a repository path when its first component is a top-level entry of
the repository (`trainer/loop.cpp`, `scripts/test.sh`, `README.md`), after dropping a trailing
`:LINE` or `:LINE-LINE`; words with placeholders (`<`, `{`, `$`, `...`, `X`/`N` style) are not
paths. A glob (`tests/e2e/*.cpp`) must match something."""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP_DIRS = {".git", "build", "build-asan", "runs", ".gpu", "__pycache__", "node_modules"}
CODE_EXT = {".cpp", ".hpp", ".cu", ".cuh", ".h", ".py", ".sh", ".cmake", ".toml"}
TOP = {e for e in os.listdir(ROOT) if not e.startswith(".") and e not in SKIP_DIRS}
TOP.add(".ci")
BACKTICK = re.compile(r"`([^`\s]+)`")
DESIGN_CITE = re.compile(r"DESIGN\.md(?:'s|,)?\s+\"([^\"]+)\"")
PLACEHOLDER = re.compile(r"[<>{}$]|\.\.\.|\bDIR\b|\bRUN_DIR\b|\bOUT\b")


def design_headings():
    with open(os.path.join(ROOT, "docs", "DESIGN.md"), encoding="utf-8") as f:
        return [line.lstrip("#").strip() for line in f if line.startswith("#")]


def files():
    for base, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")]
        rel = os.path.relpath(base, ROOT)
        if rel.startswith("tests/fuzz/corpus") or rel.startswith("runs"):
            continue
        for name in names:
            path = os.path.join(base, name)
            ext = os.path.splitext(name)[1]
            if ext == ".md" or ext in CODE_EXT or name == "CMakeLists.txt":
                yield path


def comment_text(path, line):
    """The part of a line that is prose: all of a Markdown line, a code line's comment."""
    if path.endswith(".md"):
        return line
    for marker in ("//", "#"):
        at = line.find(marker)
        if at >= 0 and (marker == "//" or not path.endswith((".cpp", ".hpp", ".cu", ".cuh", ".h"))):
            return line[at:]
    return ""


def path_exists(word):
    word = re.sub(r":\d+(-\d+)?$", "", word).rstrip(".,;:)")
    word = word.split("#", 1)[0]
    if not word or PLACEHOLDER.search(word):
        return True
    first = word.split("/", 1)[0]
    if first not in TOP or ("/" not in word and "." not in word):
        return True  # not a repository path: a command, a key, a run's file
    if any(c in word for c in "*?["):
        return bool(glob.glob(os.path.join(ROOT, word)))
    return os.path.exists(os.path.join(ROOT, word))


def main():
    headings = design_headings()
    problems = []
    for path in sorted(files()):
        rel = os.path.relpath(path, ROOT)
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                text = comment_text(path, line)
                for word in BACKTICK.findall(text):
                    if not path_exists(word):
                        problems.append(f"{rel}:{number}: `{word}` does not exist")
                for section in DESIGN_CITE.findall(text):
                    if not any(h.startswith(section) for h in headings):
                        problems.append(f"{rel}:{number}: DESIGN.md has no section \"{section}\"")
    for p in problems:
        print(p)
    print(f"docs_paths: {len(problems)} dangling reference(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
