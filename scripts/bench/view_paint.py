"""Time to the first full paint of a map in headless Chromium (software WebGL), as
benches/RESULTS.md reports it: from the navigation's start to the page's first drawing done
(the page reads a pixel back, which waits for the drawing). Prints the median of --runs
fresh tabs, in seconds, with the wall time the driver saw beside it. With --frames, also
the time of a frame while the view moves (a wheel step: the preview sample on large maps)
and of the full redraw once it rests.

    python view_paint.py URL_OR_HTML [--runs 3] [--frames]
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


# A wheel step on the map, timed to the next frame drawn.
WHEEL = """(() => {
  const v = window.sgtsneView, f0 = v.frames, t = performance.now();
  document.getElementById("map").dispatchEvent(new WheelEvent("wheel",
    { deltaY: -100, clientX: 300, clientY: 300, bubbles: true, cancelable: true }));
  return new Promise((r) => { const g = () => (v.frames > f0 ? r(performance.now() - t) : setTimeout(g, 2)); g(); });
})()"""
# From then until every point is drawn again (the view at rest).
REST = "(() => { const t = performance.now(); return window.sgtsneView.drawn().then(() => performance.now() - t); })()"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--frames", action="store_true")
    a = ap.parse_args()
    url = a.target if a.target.startswith("http") else Path(a.target).resolve().as_uri()
    paint, wall, moving, rest = [], [], [], []
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
            if a.frames:
                moving.append(page.evaluate(WHEEL) / 1000)
                rest.append(page.evaluate(REST) / 1000)
            page.close()
        ctx.close()
    print(f"first paint {statistics.median(paint):.2f} s (runs: {', '.join(f'{v:.2f}' for v in paint)}); "
          f"driver wall {statistics.median(wall):.2f} s")
    if a.frames:
        print(f"frame while moving {statistics.median(moving):.2f} s, full redraw at rest "
              f"{statistics.median(rest):.2f} s")


if __name__ == "__main__":
    main()
