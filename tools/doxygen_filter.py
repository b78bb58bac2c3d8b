#!/usr/bin/env python3
"""Doxygen's INPUT_FILTER for include/cubec/cubec.h (docs/Doxyfile): the header's comments are
plain C comments, written to be read in the header, so this turns them into Doxygen's form on the
fly instead of marking up the header: the first comment documents the file, a comment on a line of
its own documents what follows it, and a comment after code on the same line documents that code
(`/**<`). Section banners (`/* ----`) and clang-format switches stay plain comments. Lines are
neither added nor removed, so Doxygen's line numbers are the header's."""
import re
import sys

text = open(sys.argv[1]).read()
out = []
first = True
in_comment = False
for line in text.split("\n"):
    if not in_comment:
        stripped = line.lstrip()
        code, sep, rest = line.partition("/*")
        if sep and not rest.startswith(("*", " ---", " clang-format")) and '"' not in code:
            if first and not code.strip():
                line = code + "/** @file cubec.h\n *" + rest
            elif code.strip():
                line = code + "/**<" + rest
            else:
                line = code + "/**" + rest
            first = False
        if sep and "*/" not in rest:
            in_comment = True
    elif "*/" in line:
        in_comment = False
        # A comment may open again after the one that closed on this line.
        tail = line.split("*/", 1)[1]
        if "/*" in tail and "*/" not in tail.split("/*", 1)[1]:
            in_comment = True
    out.append(line)
sys.stdout.write("\n".join(out))
