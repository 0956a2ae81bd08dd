#!/usr/bin/env python3
"""Writes the Python API reference (docs/reference/python.md) from the package's docstrings,
so that it cannot drift from the code: `python scripts/docs/python_reference.py > FILE`, and
python/tests/test_reference.py fails when the committed page differs from what this prints.

Needs the package installed (`pip install ./python`)."""

import inspect
import sys

import sgtsne

ENTRIES = [
    ("sgtsne.TSNE", sgtsne.TSNE),
    ("sgtsne.TSNE.fit", sgtsne.TSNE.fit),
    ("sgtsne.TSNE.fit_transform", sgtsne.TSNE.fit_transform),
    ("sgtsne.TSNE.transform", sgtsne.TSNE.transform),
    ("sgtsne.tl.tsne", sgtsne.tl.tsne),
    ("sgtsne.knn", sgtsne.knn),
    ("sgtsne.kl_divergence", sgtsne.kl_divergence),
    ("sgtsne.view", sgtsne.view),
    ("sgtsne.info", sgtsne.info),
    ("sgtsne.GaussianMixture", sgtsne.GaussianMixture),
]


def signature(obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return ""
    params = [p for p in sig.parameters.values() if p.name != "self"]
    return "(" + ", ".join(str(p) for p in params) + ")"


def page():
    out = [
        "# Python API reference",
        "",
        "Generated from the docstrings by `scripts/docs/python_reference.py`; do not edit by",
        "hand (a test fails when this page and the code disagree). The guide's",
        "[Python page](../python.md) explains the tasks.",
        "",
    ]
    for name, obj in ENTRIES:
        out += [f"## `{name}`", "", "```python", f"{name}{signature(obj)}", "```", ""]
        doc = inspect.getdoc(obj) or ""
        out += [doc, ""]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(page())
