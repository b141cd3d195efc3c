#!/usr/bin/env python3
"""Fails when a function in the given C++ files is longer than LIMIT lines, from the line its
signature starts on to its closing brace: a command reads as a few named steps.

usage: function_length.py LIMIT FILE...

Functions are found by their braces: a '{' whose statement ends in ')' (or a constructor's
initializer list) opened directly in a namespace, class or the file. Lambdas and blocks inside a
function count toward that function.
"""
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


def main():
    limit = int(sys.argv[1])
    bad = []
    for path in sys.argv[2:]:
        for start, length in long_functions(path, limit):
            bad.append("%s:%d: a function of %d lines (at most %d)" % (path, start, length, limit))
    for line in bad:
        print(line)
    if not bad:
        print("every function in %d files is at most %d lines" % (len(sys.argv) - 2, limit))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
