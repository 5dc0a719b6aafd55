#!/usr/bin/python3
"""json-check.py - check, or print, Python expressions over JSON files (tests/lib.sh's
json_check and json_get).

    json-check.py check [NAME=]FILE... [LINE...]   each check holds (lines from stdin
                                                   when none are given)
    json-check.py get   [NAME=]FILE... LINE...     print each expression's value

FILE is read as j, NAME=FILE as NAME; `-` is stdin.  Objects read with attribute access
too: j.header.samples is j["header"]["samples"] (a key that is not an identifier, or is
a dict method's name, needs the brackets).  The lines are Python: an expression is a
check (it must be true) or, for get, a value to print (a list or tuple as its items
separated by spaces, for `set -- $(json_get ...)`); `NAME = EXPR`, def, for, assert,
print() run as Python.  Inside a block an expression other than a method call
(list.append) or print() is refused: it would check nothing (assert it); so is a run
with no check at all (an empty heredoc).  collections, math, os, re and statistics are
imported.  The first false check ends the run, exit 1, naming it with the values of its
comparison's sides and the names it reads.
"""
import ast
import collections
import json
import math
import os
import re
import statistics
import sys
import textwrap


class Obj(dict):
    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None


def load(path):
    text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    return json.loads(text, object_hook=Obj)


def show(v, limit=1500):
    s = repr(v)
    return s if len(s) <= limit else s[:limit] + "..."


def fail(msg):
    print("json_check: " + msg, file=sys.stderr)
    sys.exit(1)


def bind(args):
    """NAME=FILE... (or one FILE, bound to j) at the front of args; the rest follows."""
    env = {"collections": collections, "math": math, "os": os, "re": re,
           "statistics": statistics}
    files = []
    while args and re.match(r"[A-Za-z_]\w*=(?!=)", args[0]):
        name, path = args.pop(0).split("=", 1)
        files.append((name, path))
    if not files:
        if not args:
            fail("no FILE")
        files.append(("j", args.pop(0)))
    for name, path in files:
        try:
            env[name] = load(path)
        except (OSError, ValueError) as e:
            fail("%s: %s" % (path, e))
    return env, files, args


def explain(node, env):
    """The values behind a false expression: a comparison's sides, the false part of an
    `and`, the names it reads."""
    lines = []

    def value(n):
        return eval(compile(ast.Expression(n), "<check>", "eval"), env)

    def walk(n):
        if isinstance(n, ast.BoolOp) and isinstance(n.op, ast.And):
            for part in n.values:
                if not value(part):
                    walk(part)
                    return
        elif isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            walk(n.operand)
        elif isinstance(n, ast.Compare):
            for side in [n.left] + n.comparators:
                if not isinstance(side, ast.Constant):
                    lines.append("  %s = %s" % (ast.unparse(side), show(value(side))))

    walk(node)
    seen = set()
    for n in ast.walk(node):
        if (isinstance(n, ast.Name) and n.id in env and n.id not in seen and
                not isinstance(env[n.id], type(re)) and not callable(env[n.id])):
            seen.add(n.id)
            lines.append("  %s = %s" % (n.id, show(env[n.id], 600)))
    return lines


def is_print(stmt):
    return (isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name) and
            stmt.value.func.id == "print")


def run(mode, env, files, source):
    """Run the lines of source: an expression is checked (mode "check") or printed
    (mode "get"); other statements run as Python."""
    try:
        tree = ast.parse(textwrap.dedent(source), "<check>")
    except SyntaxError as e:
        fail("cannot parse (line %s): %s" % (e.lineno, e.msg))
    for stmt in tree.body:
        for n in ast.walk(stmt):
            # in a block, only a method call (list.append) or print() stands alone
            if (n is not stmt and isinstance(n, ast.Expr) and not is_print(n) and
                    not (isinstance(n.value, ast.Call) and
                         isinstance(n.value.func, ast.Attribute))):
                fail("line %d: %s: an expression inside a block checks nothing (assert it)" %
                     (n.lineno, ast.unparse(n)))
    where = ", ".join(p if name == "j" else "%s=%s" % (name, p) for name, p in files)
    if mode == "check" and not (any(isinstance(n, ast.Assert) for n in ast.walk(tree)) or
                                any(isinstance(s, ast.Expr) and not is_print(s)
                                    for s in tree.body)):
        fail("%s: no check (an empty heredoc?)" % where)
    for stmt in tree.body:
        text = ast.unparse(stmt)
        try:
            if isinstance(stmt, ast.Expr) and not is_print(stmt):
                value = eval(compile(ast.Expression(stmt.value), "<check>", "eval"), env)
                if mode == "get":
                    print(text_of(value))
                elif not value:
                    try:
                        why = explain(stmt.value, env)
                    except Exception:
                        why = []
                    fail("\n".join(["%s: not true: %s" % (where, text)] + why))
            else:
                exec(compile(ast.Module([stmt], []), "<check>", "exec"), env)
        except SystemExit:
            raise
        except Exception as e:
            fail("%s: %s\n  %s: %s" % (where, text.splitlines()[0], type(e).__name__, e))


def text_of(v):
    if isinstance(v, (tuple, list)):
        return " ".join(str(x) for x in v)
    return str(v)


def main(argv):
    if len(argv) < 2 or argv[1] not in ("get", "check"):
        print("usage: json-check.py get [NAME=]FILE... EXPR...\n"
              "       json-check.py check [NAME=]FILE... [CHECK...]", file=sys.stderr)
        return 2
    env, files, rest = bind(argv[2:])
    if argv[1] == "get" and not rest:
        fail("json_get: no EXPR")
    run(argv[1], env, files, "\n".join(rest) if rest else sys.stdin.read())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
