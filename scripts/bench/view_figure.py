"""A screenshot of a map as a person first sees it, for the README and docs/viewer.md
(docs/figures/view_*.png): headless Chromium, software WebGL, 1000 × 640, reduced to a
256-colour palette to keep the repository small.

    python view_figure.py MAP.html OUT.png [--density]

scripts/bench/view_figures.sh makes the maps and runs this for every figure.
"""

import argparse
import io
import sys
import tempfile
from pathlib import Path

from PIL import Image
from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "browser"))
from conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("map")
    ap.add_argument("out")
    ap.add_argument("--density", action="store_true")
    a = ap.parse_args()
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        ctx = p.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True,
            viewport={"width": 1000, "height": 640},
        )
        page = ctx.new_page()
        page.goto(Path(a.map).resolve().as_uri())
        page.evaluate("() => window.sgtsneView.ready.then(() => true)")
        if a.density:
            page.check("#density")
        page.evaluate("() => window.sgtsneView.drawn()")
        shot = Image.open(io.BytesIO(page.screenshot()))
        ctx.close()
    shot.convert("RGB").quantize(256, dither=Image.Dither.NONE).save(a.out, optimize=True)


if __name__ == "__main__":
    main()
