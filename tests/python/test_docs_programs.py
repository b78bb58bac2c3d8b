"""The first Python programs of README.md and docs/python.md run as written and print what their
comments say (`print(...)  # [1. 2. 3.]`): a newcomer copies them first."""

import contextlib
import io
import os
import re

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def programs(doc, count):
    with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    return blocks[:count]


@pytest.mark.parametrize("doc,index", [("README.md", 0), ("docs/python.md", 0),
                                       ("docs/python.md", 1)])
def test_program_prints_what_its_comments_say(doc, index):
    source = programs(doc, index + 1)[index]
    # The comment is the printed line, then optionally a remark in parentheses.
    expected = re.findall(r"^\s*print\(.*\)\s*#\s*(.+?)(?:\s+\(.*\))?\s*$", source, re.M)
    assert expected, f"{doc} program {index} has no print with its output in a comment"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, f"{doc}[{index}]", "exec"), {})
    assert out.getvalue().splitlines() == expected
