#!/usr/bin/env python3
"""Names private to a file stay private in a unity build (LBT_UNITY, docs/development.md): the
files of experiments/, cli/ and trainer/ are compiled in batches, one translation unit each, so two
files' anonymous-namespace helpers of one name meet there, as a redefinition or, worse, as two
overloads the compiler silently picks between. Lists every function, type or constant that an
anonymous namespace defines in two files of one unity target; run by CTest as `unity_names`;
exits 1 if there is any."""
import collections
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = {"lbt_experiments": "experiments/**/*.cpp", "lbt": "cli/*.cpp", "lbt_trainer": "trainer/**/*.cpp"}
ANONYMOUS = re.compile(r"\nnamespace \{\n(.*?)\n\}  // namespace", re.S)
TYPE = re.compile(r"(?:template\s*<.*>\s*)?(?:struct|class|enum class|enum|using)\s+(\w+)")
CONSTANT = re.compile(r"(?:static\s+)?(?:inline\s+)?(?:constexpr|const)\s+[\w:<>, *&]+?\s(\w+)\s*(?:=|\[|\{)")
FUNCTION = re.compile(r"(?:template\s*<.*>\s*)?[\w:<>, *&\[\]]+?[\s*&](\w+)\(")


def private_names(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    names = set()
    for block in ANONYMOUS.findall(text):
        for line in block.split("\n"):
            if not line or line[0] in " \t/#}":
                continue
            # A statement with a call in it defines no function; it may define a constant.
            statement = line.rstrip().endswith(";") and "(" in line
            for pattern in (CONSTANT,) if statement else (TYPE, CONSTANT, FUNCTION):
                m = pattern.match(line)
                if m:
                    names.add(m.group(1))
                    break
    return names


def main():
    found = 0
    for target, pattern in TARGETS.items():
        where = collections.defaultdict(list)
        for path in sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True)):
            for name in private_names(path):
                where[name].append(os.path.relpath(path, ROOT))
        for name, files in sorted(where.items()):
            if len(files) > 1:
                found += 1
                print(f"{target}: '{name}' is defined in an anonymous namespace of {', '.join(files)}: "
                      "rename all but one (they meet in one unity batch)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
