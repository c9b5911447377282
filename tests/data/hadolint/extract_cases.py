#!/usr/bin/env python3
"""Extracts the test cases of hadolint's rule specs (test/Hadolint/Rule/DLxxxxSpec.hs) into a
TSV table: id, expect (catches|not), onbuild (0|1), spec file:line, Dockerfile text (\\n-escaped).

Usage: extract_cases.py HADOLINT_CHECKOUT COMMIT > cases.tsv
Only the two forms the specs use are read: a one-line string literal after ruleCatches /
ruleCatchesNot / onBuildRuleCatches / onBuildRuleCatchesNot, and a `let dockerFile = [ ... ]`
list followed by `ruleCatches(Not) "ID" $ Text.unlines dockerFile`. Anything else is skipped and
counted on stderr."""
import re, subprocess, sys

IDS = ["DL3002", "DL3003", "DL3004", "DL3006", "DL3007", "DL3009", "DL3011", "DL3015",
       "DL3019", "DL3032", "DL3036", "DL3042", "DL3060", "DL4000"]
repo, commit = sys.argv[1], sys.argv[2]
STR = r'"((?:[^"\\]|\\.)*)"'


def unescape(s):
    return bytes(s, "utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")


print("# hadolint rule spec cases, extracted by extract_cases.py from hadolint/hadolint at "
      f"commit {commit}")
skipped = 0
for rid in IDS:
    path = f"test/Hadolint/Rule/{rid}Spec.hs"
    text = subprocess.run(["git", "-C", repo, "show", f"{commit}:{path}"], capture_output=True,
                          text=True, check=True).stdout
    lines = text.split("\n")
    pending = None  # (start line, [strings]) of a `let dockerFile = [` list
    var_line = None  # the string of a `let line = "..."`
    for i, line in enumerate(lines, 1):
        if re.search(r"^\s*it\s", line):
            pending, var_line = None, None
        m = re.search(r"let dockerFile\s*=\s*$", line) or re.search(r"let dockerFile\s*=\s*\[", line)
        if m:
            pending = (i, [])
        lm = re.search(r"let line\s*=\s*" + STR, line)
        if lm:
            var_line = unescape(lm.group(1))
        if pending is not None and not lm:
            for s in re.findall(STR, line) if "Catches" not in line else []:
                pending[1].append(unescape(s))
        m = re.search(r"\b(onBuildRuleCatches|onBuildRuleCatchesNot|ruleCatches|ruleCatchesNot)\s+"
                      + STR + r"\s*(.*)$", line)
        if not m:
            continue
        fn, cid, rest = m.group(1), m.group(2), m.group(3)
        onbuild = fn.startswith("onBuild")
        expect = "not" if fn.endswith("Not") else "catches"
        lit = re.match(r"\$?\s*" + STR, rest)
        if lit:
            body = unescape(lit.group(1))
        elif "dockerFile" in rest and pending is not None:
            body = "\n".join(pending[1]) + "\n"
        elif rest.strip() == "line" and var_line is not None:
            body = var_line
        else:
            skipped += 1
            continue
        esc = body.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
        print(f"{cid}\t{expect}\t{int(onbuild)}\t{path}:{i}\t{esc}")
print(f"skipped {skipped} case(s) of another form", file=sys.stderr)
