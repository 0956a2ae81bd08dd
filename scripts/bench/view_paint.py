"""Time to the first full paint of a map in headless Chromium (software WebGL), as
benches/view.md reports it: from the navigation's start to the page's first drawing done
(the page reads a pixel back, which waits for the drawing). Prints the median of --runs
fresh tabs, in seconds, with the wall time the driver saw beside it.

    python view_paint.py URL_OR_HTML [--runs 3]
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "browser"))
from conftest import CHROMIUM, CHROMIUM_ARGS, VIEWPORT  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    url = a.target if a.target.startswith("http") else Path(a.target).resolve().as_uri()
    paint, wall = [], []
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        ctx = p.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, viewport=VIEWPORT
        )
        for _ in range(a.runs):
            page = ctx.new_page()
            t = time.perf_counter()
            page.goto(url, timeout=300_000)
            page.wait_for_function("window.sgtsneView && window.sgtsneView.firstPaintMs !== null", timeout=300_000)
            wall.append(time.perf_counter() - t)
            paint.append(page.evaluate("window.sgtsneView.firstPaintMs") / 1000)
            page.close()
        ctx.close()
    print(f"first paint {statistics.median(paint):.2f} s (runs: {', '.join(f'{v:.2f}' for v in paint)}); "
          f"driver wall {statistics.median(wall):.2f} s")


if __name__ == "__main__":
    main()
