#!/usr/bin/env python3
"""The server's layers, checked on its calls (docs/ARCHITECTURE.md, "Layers").

    check_calls.py [FOLDER] [--max N] [--ranks]

For each function defined in FOLDER/*.c, the names its body calls; a call to a name defined in
exactly one other file of FOLDER ties the two files. Files that reach each other through such
calls form a circle; the check fails (exit 1) when a circle holds more than N files (default 2:
a pair of files that call each other is tolerated, a longer circle means the layers are gone).
Calls through function pointers (listeners, hooks) are not seen, which is what they are for.
--ranks prints each file's rank: the longest chain of calls from it down to a file that calls
no other (the rank table of docs/ARCHITECTURE.md).

Function definitions are found in clang-format's layout (.clang-format): a definition starts at
column 0 and its body opens with a `{` alone on a line and closes with a `}` alone on a line, so
no C parser (and no ctags) is needed. Comments and strings are blanked before names are read.
"""
import os
import re
import sys

IDENT = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")
NOISE = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'", re.S)
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "defined", "_Alignof", "_Generic"}


def functions(path):
    """(name, body) of each function defined in the file."""
    text = NOISE.sub(lambda m: "\n" * m.group(0).count("\n"), open(path, errors="replace").read())
    lines = text.split("\n")
    found, i = [], 0
    while i < len(lines):
        line = lines[i]
        if line and not line[0].isspace() and line[0] not in "#}" and "(" in line:
            # The name is the last identifier before the first '(' of the head.
            head = IDENT.findall(line.split("(")[0] + "(")
            j = i
            while j < len(lines) and lines[j] != "{" and not lines[j].rstrip().endswith(";"):
                j += 1
            if head and j < len(lines) and lines[j] == "{":
                end = j + 1
                while end < len(lines) and lines[end] != "}":
                    end += 1
                found.append((head[-1], "\n".join(lines[j:end])))
                i = end
        i += 1
    return found


def call_graph(folder):
    files = sorted(f for f in os.listdir(folder) if f.endswith(".c"))
    defined = {f: functions(os.path.join(folder, f)) for f in files}
    owner = {}
    for f, funcs in defined.items():
        for name, _ in funcs:
            owner.setdefault(name, set()).add(f)
    edges = {f: {} for f in files}  # caller file -> callee file -> names
    for f, funcs in defined.items():
        for _, body in funcs:
            for name in IDENT.findall(body):
                where = owner.get(name, ())
                if name in KEYWORDS or len(where) != 1:
                    continue
                (g,) = where
                if g != f:
                    edges[f].setdefault(g, set()).add(name)
    return edges


def circles(edges):
    """Strongly connected components (Tarjan), largest first."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return sorted(out, key=len, reverse=True)


def ranks(edges, comps):
    """Longest call chain down from each file, a circle counting as one step."""
    comp_of = {f: i for i, c in enumerate(comps) for f in c}
    memo = {}

    def rank(i):
        if i not in memo:
            below = {comp_of[g] for f in comps[i] for g in edges[f]} - {i}
            memo[i] = 1 + max((rank(j) for j in below), default=-1)
        return memo[i]

    return {f: rank(comp_of[f]) for f in edges}


def main(argv):
    args, limit, show_ranks = list(argv), 2, False
    if "--max" in args:
        k = args.index("--max")
        limit = int(args[k + 1])
        del args[k : k + 2]
    if "--ranks" in args:
        args.remove("--ranks")
        show_ranks = True
    folder = args[0] if args else "src/server"
    edges = call_graph(folder)
    comps = circles(edges)
    if show_ranks:
        by_rank = {}
        for f, r in ranks(edges, comps).items():
            by_rank.setdefault(r, []).append(f)
        for r in sorted(by_rank, reverse=True):
            print(f"{r:3d}  {', '.join(sorted(by_rank[r]))}")
    status = 0
    for comp in comps:
        if len(comp) <= limit:
            break
        status = 1
        print(f"check_calls: {len(comp)} files of {folder} call each other in a circle:")
        for f in comp:
            for g, names in sorted(edges[f].items()):
                if g in comp:
                    print(f"  {f} -> {g}: {', '.join(sorted(names))}")
    n_edges = sum(len(v) for v in edges.values())
    print(f"check_calls: {folder}: {len(edges)} files, {n_edges} file-to-file call edges, "
          f"largest circle {len(comps[0]) if comps else 0} (at most {limit})")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
