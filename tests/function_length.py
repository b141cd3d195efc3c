#!/usr/bin/env python3
"""Fails when a function in the given C++ files is longer than LIMIT lines, from the line its
signature starts on to its closing brace: a command reads as a few named steps.

usage: function_length.py LIMIT [--allow LIST] FILE...

LIST names the functions allowed over LIMIT for now, one per line as "PATH NAME" (PATH relative
to the folder above LIST's, the repository root for tests/function_length_allow.txt; NAME: the
identifier before the signature's '('; '#' starts a comment). It may only shrink: an entry that
is no longer over LIMIT, or names no function, fails the check until it is deleted.

Functions are found by their braces: a '{' whose statement ends in ')' (or a constructor's
initializer list) opened directly in a namespace, class or the file. Lambdas and blocks inside a
function count toward that function.
"""
import os
import re
import sys

CONTROL = re.compile(r"^\s*(if|for|while|switch|catch|else|do|try)\b")


def code_of(line, state):
    """The line without comments and string or character literals; state: inside /* */."""
    out, i = [], 0
    while i < len(line):
        if state["block"]:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out)
            state["block"], i = False, end + 2
        elif line.startswith("//", i):
            break
        elif line.startswith("/*", i):
            state["block"], i = True, i + 2
        elif line[i] in "\"'":
            quote, i = line[i], i + 1
            while i < len(line) and line[i] != quote:
                i += 2 if line[i] == "\\" else 1
            i += 1
            out.append("0")
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


def long_functions(path, limit):
    stack = []  # (kind, start line) of each open brace
    statement, statement_start = "", None
    state = {"block": False}
    for number, raw in enumerate(open(path, encoding="utf-8"), 1):
        line = code_of(raw.rstrip("\n"), state)
        if line.strip().startswith("#"):
            continue
        for ch in line:
            if statement_start is None and not ch.isspace():
                statement_start = number
            if ch == "{":
                head = statement.strip()
                in_function = any(kind == "function" for kind, _ in stack)
                if in_function:
                    kind = "block"
                elif re.search(r"\b(namespace|class|struct|enum|union)\b", head) and "(" not in head:
                    kind = "scope"
                elif (head.endswith(")") or re.search(r"\)\s*(const|override|noexcept|final|\s)*$", head)
                      or re.search(r"\)\s*:", head)) and not CONTROL.match(head) and "=" not in head.split("(")[0]:
                    kind = "function"
                else:
                    kind = "block"
                stack.append((kind, statement_start or number))
                statement, statement_start = "", None
            elif ch == "}":
                if stack:
                    kind, start = stack.pop()
                    if kind == "function" and number - start + 1 > limit:
                        yield start, number - start + 1
                statement, statement_start = "", None
            elif ch == ";":
                statement, statement_start = "", None
            else:
                statement += ch
        statement += " "


def name_at(path, line):
    """The identifier before the first '(' of the signature starting at `line` (not a
    __attribute__-like macro such as __launch_bounds__)."""
    text = ""
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            if number < line:
                continue
            text += raw
            names = [n for n in re.findall(r"([A-Za-z_][A-Za-z0-9_:~]*)\s*\(", text)
                     if not n.startswith("__")]
            if names:
                return names[0].split("::")[-1]
            if number > line + 10:
                break
    return "?"


def read_allow(path):
    allowed = set()
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.split("#", 1)[0].split()
            if line:
                allowed.add((line[0], line[1]))
    return allowed


def main():
    limit = int(sys.argv[1])
    files = sys.argv[2:]
    allowed = set()
    root = ""
    if files[:1] == ["--allow"]:
        allowed, root = read_allow(files[1]), os.path.dirname(os.path.dirname(os.path.abspath(files[1])))
        files = files[2:]
    bad, seen = [], set()
    for path in files:
        rel = os.path.relpath(os.path.abspath(path), root) if root else path
        for start, length in long_functions(path, limit):
            key = (rel, name_at(path, start))
            if key in allowed:
                seen.add(key)
                continue
            bad.append("%s:%d: a function of %d lines (at most %d)" % (path, start, length, limit))
    for path, name in sorted(allowed - seen):
        bad.append("%s: %s is in the allowlist but not over %d lines (delete its line)" % (path, name, limit))
    for line in bad:
        print(line)
    if not bad:
        print("every function in %d files is at most %d lines (%d allowed over it)" % (len(files), limit, len(seen)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
