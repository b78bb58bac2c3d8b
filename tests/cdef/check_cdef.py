#!/usr/bin/env python3
"""cubec_cdef.h is read as is by cffi (FFI().cdef) and by pycparser (CParser().parse), declares
every function of cubec.h, and lays out each type as the compiler lays out cubec.h's (the sizes
cdef_sizes prints); its constants enum holds the header's version. Fails (exit 1) naming what
differs. Usage: check_cdef.py CUBEC_CDEF_H CUBEC_H CDEF_SIZES_PROGRAM"""
import re
import subprocess
import sys

import cffi
import pycparser
from pycparser import c_ast


def main():
    cdef_path, header_path, sizes_program = sys.argv[1:4]
    text = open(cdef_path).read()
    failures = []

    ffi = cffi.FFI()
    ffi.cdef(text)  # raises on anything cffi cannot read
    ast = pycparser.CParser().parse(text, filename=cdef_path)

    class Functions(c_ast.NodeVisitor):
        def __init__(self):
            self.names = set()

        def visit_Decl(self, node):
            if isinstance(node.type, c_ast.FuncDecl):
                self.names.add(node.name)

    found = Functions()
    found.visit(ast)
    header = open(header_path).read()
    declared = set(re.findall(r"\b(cubec_[a-z_0-9]+)\(", header))
    for name in sorted(declared - found.names):
        failures.append("%s is declared in cubec.h but not in cubec_cdef.h" % name)
    if len(found.names) < 70:
        failures.append("only %d functions in cubec_cdef.h" % len(found.names))

    expected = subprocess.run([sizes_program], check=True, capture_output=True, text=True).stdout
    for line in expected.splitlines():
        name, value = line.split()
        if name == "CUBEC_VERSION":
            got = ffi.dlopen(None).CUBEC_VERSION  # as a binding reads it: lib.CUBEC_VERSION
        else:
            got = ffi.sizeof(name)
        if got != int(value):
            failures.append("%s: %d in cubec_cdef.h (cffi), %s in cubec.h (the compiler)"
                            % (name, got, value))

    for f in failures:
        print("FAIL:", f)
    if failures:
        return 1
    print("cubec_cdef.h: cffi %s and pycparser %s read it; %d functions; %d types match"
          % (cffi.__version__, pycparser.__version__, len(found.names),
             len(expected.splitlines()) - 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
