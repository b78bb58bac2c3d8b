#!/usr/bin/env python3
"""The README's "What `make test` runs" section against the Makefile's `test` target: every
prerequisite of `test` is named as `make <target>`, every ctest filter (-LE label, -E test) and
every test of the TSan list is named, the fuzz seconds are the Makefile's, each harness is named,
and every test carrying a label the sanitizer run leaves out is named. A stage added to the
Makefile without a word in the README fails here.
Usage: readme_make_test.py SOURCE_DIR"""
import re
import sys

src = sys.argv[1]
makefile = open(f"{src}/Makefile").read()
readme = open(f"{src}/README.md").read()
cmakelists = open(f"{src}/tests/CMakeLists.txt").read()

m = re.search(r"^## What `make test` runs\n(.*?)(?=^## )", readme, re.M | re.S)
if not m:
    sys.exit("FAIL: README.md has no section '## What `make test` runs'")
section = m.group(1)
errors = []


def need(text, why):
    if text not in section:
        errors.append(f"the section does not name {text!r} ({why})")


prereqs = re.search(r"^test:(.*)$", makefile, re.M).group(1).split()
for p in prereqs:
    need(f"`make {p}`", "a prerequisite of test")
recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", makefile, re.M).group(1)
recipe = recipe.replace("\\\n", " ")
for label in re.findall(r"-LE (\S+)", recipe):
    need(f"`{label}`", "a label ctest leaves out")
    for test in re.findall(r"add_test\(NAME (\S+)[^)]*\)\s*\n?\s*set_tests_properties\(\1 PROPERTIES LABELS "
                           + re.escape(label) + r"\b", cmakelists):
        need(f"`{test}`", f"a test labelled {label}")
for test in re.findall(r" -E (\S+)", recipe):
    need(f"`{test}`", "a test ctest leaves out")
for r in re.findall(r'-R\s+"([^"]+)"', recipe):
    for test in r.split("|"):
        need(f"`{test}`", "a test of the TSan run")
seconds = re.search(r"^FUZZ_TEST_SECONDS\s*\?=\s*(\d+)", makefile, re.M).group(1)
need(f"`FUZZ_TEST_SECONDS` ({seconds})", "the fuzz seconds")
harnesses = re.search(r"for f in ([a-z_ ]+); do", makefile).group(1).split()
for h in harnesses:
    need(f"`fuzz_{h}`", "a fuzz harness")
for e in errors:
    print("FAIL:", e)
if not errors:
    print(f"README names the {len(prereqs)} stages of make test, its filters, the TSan tests "
          f"and the {len(harnesses)} harnesses")
sys.exit(1 if errors else 0)
