"""The committed Python API reference is what the docstrings say today."""

import subprocess
import sys

from conftest import ROOT


def test_the_python_reference_page_matches_the_docstrings():
    script = ROOT / "scripts" / "docs" / "python_reference.py"
    page = ROOT / "docs" / "reference" / "python.md"
    printed = subprocess.run([sys.executable, str(script)], check=True, capture_output=True,
                             text=True).stdout
    assert page.read_text() == printed, (
        f"{page} is out of date: python scripts/docs/python_reference.py > docs/reference/python.md"
    )
