"""A griffe extension for the API reference (mkdocs.yml loads it for mkdocstrings): zstc's docstrings are written
for Sphinx-aware readers (``code``, :func:`name`, ``>>>`` examples); Markdown shows them as written unless they are
turned into its own forms: a role becomes inline code, double backticks single ones, and a doctest a Python block."""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:func|class|mod|data|attr|meth|exc|obj|const):`~?([^`]+)`")


def markdown(text: str) -> str:
    """``text`` with roles as inline code, ````x```` as ``x`` and each run of ``>>>`` lines (with their output) fenced."""
    text = ROLE.sub(r"`\1`", text)
    text = re.sub(r"``([^`]+)``", r"`\1`", text)
    lines, out, in_doctest = text.split("\n"), [], False
    for line in lines:
        starts = line.lstrip().startswith(">>>")
        if starts and not in_doctest:
            out.append("```python")
            in_doctest = True
        elif in_doctest and not line.strip():
            out.append("```")
            in_doctest = False
        out.append(line)
    if in_doctest:
        out.append("```")
    return "\n".join(out)


class SphinxText(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
