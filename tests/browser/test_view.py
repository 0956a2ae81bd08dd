"""What a person sees in a map that `sgtsne view` writes, checked in headless Chromium:
colours at known clusters, the legend, hover, lasso, toggles, search, the colour bar,
exports, 3-D axes and the served page."""

import io
import re
import subprocess

import numpy as np
import pytest
from PIL import Image

from conftest import CENTRES, LONE, PER_CLUSTER, view

WHITE = (255, 255, 255)


def open_map(page, url):
    page.goto(url if url.startswith("http") else f"file://{url}")
    page.evaluate("() => window.sgtsneView.ready.then(() => true)")
    page.wait_for_function("window.sgtsneView.columnsLoaded")
    page.evaluate("() => window.sgtsneView.drawn()")


def screenshot(page):
    return np.asarray(Image.open(io.BytesIO(page.screenshot())).convert("RGB")).astype(int)


def at(shot, xy):
    x, y = (int(round(v)) for v in xy)
    return tuple(shot[y, x])


def screen_of(page, i):
    return page.evaluate(f"window.sgtsneView.screenOf({i})")


def centre_point(data, name):
    """The index of the point of cluster `name` nearest its centre (under many others)."""
    y = np.load(data / "blobs.npy")
    k = list(CENTRES).index(name)
    block = y[k * PER_CLUSTER:(k + 1) * PER_CLUSTER]
    return k * PER_CLUSTER + int(np.argmin(((block - CENTRES[name]) ** 2).sum(axis=1)))


def swatch(page, name):
    css = page.eval_on_selector(f'#legend li[data-category="{name}"] .swatch', "e => getComputedStyle(e).backgroundColor")
    return tuple(int(v) for v in re.findall(r"\d+", css)[:3])


def close(a, b, tol=6):
    return all(abs(p - q) <= tol for p, q in zip(a, b))


def test_clusters_have_their_labels_colours(page, blobs_map, data):
    open_map(page, str(blobs_map))
    shot = screenshot(page)
    colours = set()
    for name in CENTRES:
        pixel = at(shot, screen_of(page, centre_point(data, name)))
        assert close(pixel, swatch(page, name)), (name, pixel, swatch(page, name))
        colours.add(swatch(page, name))
    assert len(colours) == 4
    # Between the clusters the page is blank.
    assert at(shot, screen_of(page, 0)) != WHITE
    a, b = screen_of(page, centre_point(data, "alpha")), screen_of(page, centre_point(data, "beta"))
    assert at(shot, ((a[0] + b[0]) / 2, a[1])) == WHITE


def test_legend_lists_the_labels_and_counts(page, blobs_map):
    open_map(page, str(blobs_map))
    entries = page.eval_on_selector_all(
        "#legend li", "els => els.map(e => [e.dataset.category, e.querySelector('.n').textContent])"
    )
    assert entries == [["alpha", "500"], ["beta", "500"], ["delta", "500"], ["gamma", "500"], ["lone", "1"]]
    assert page.eval_on_selector("#colour-by", "s => [...s.options].map(o => o.text)") == ["labels", "score", "batch"]


def test_hover_shows_index_and_metadata(page, blobs_map):
    open_map(page, str(blobs_map))
    page.mouse.move(*screen_of(page, LONE))
    page.wait_for_selector("#hover:not([hidden])")
    text = page.inner_text("#hover")
    assert f"point {LONE}" in text
    assert "labels: lone" in text
    assert f"score: {0.5 * LONE:g}" in text
    assert "batch: b0" in text


def lasso(page, indices, margin=12):
    xy = np.array([screen_of(page, i) for i in indices])
    x0, y0 = xy.min(axis=0) - margin
    x1, y1 = xy.max(axis=0) + margin
    page.keyboard.down("Shift")
    page.mouse.move(x0, y0)
    page.mouse.down()
    for x, y in [(x1, y0), (x1, y1), (x0, y1), (x0, y0)]:
        page.mouse.move(x, y, steps=4)
    page.mouse.up()
    page.keyboard.up("Shift")


def test_lasso_selects_a_cluster_and_downloads_it(page, blobs_map):
    open_map(page, str(blobs_map))
    beta = range(PER_CLUSTER, 2 * PER_CLUSTER)
    lasso(page, beta)
    assert page.evaluate("window.sgtsneView.selected") == PER_CLUSTER
    assert page.inner_text("#selection") == "500 selected"
    with page.expect_download() as d:
        page.click("#download")
    rows = open(d.value.path()).read().split()
    assert rows[0] == "index" and [int(r) for r in rows[1:]] == list(beta)


def test_legend_toggle_hides_and_shows_points(page, blobs_map, data):
    open_map(page, str(blobs_map))
    where = screen_of(page, centre_point(data, "gamma"))
    colour = swatch(page, "gamma")
    page.click('#legend li[data-category="gamma"]')
    page.evaluate("() => window.sgtsneView.drawn()")
    assert at(screenshot(page), where) == WHITE
    assert page.get_attribute('#legend li[data-category="gamma"]', "class") == "off"
    # Hidden points cannot be selected.
    lasso(page, range(2 * PER_CLUSTER, 3 * PER_CLUSTER))
    assert page.evaluate("window.sgtsneView.selected") == 0
    page.click('#legend li[data-category="gamma"]')
    page.evaluate("() => window.sgtsneView.drawn()")
    assert close(at(screenshot(page), where), colour)


def test_search_fades_the_other_labels(page, blobs_map, data):
    open_map(page, str(blobs_map))
    page.fill("#search", "del")
    page.evaluate("() => window.sgtsneView.drawn()")
    shot = screenshot(page)
    assert close(at(shot, screen_of(page, centre_point(data, "delta"))), swatch(page, "delta"))
    faded = at(shot, screen_of(page, centre_point(data, "alpha")))
    assert min(faded) > 200 and faded != WHITE
    assert page.eval_on_selector_all("#legend li", "els => els.map(e => e.dataset.category)") == ["delta"]


def test_map_comes_back_after_a_lost_context(page, blobs_map, data):
    open_map(page, str(blobs_map))
    page.click('#legend li[data-category="beta"]')
    page.evaluate("""() => {
        window.loseContext = document.getElementById("map").getContext("webgl2").getExtension("WEBGL_lose_context");
        window.loseContext.loseContext();
    }""")
    page.wait_for_function("window.sgtsneView.contextLost")
    page.evaluate("() => window.loseContext.restoreContext()")
    page.evaluate("() => window.sgtsneView.drawn()")
    shot = screenshot(page)
    assert close(at(shot, screen_of(page, centre_point(data, "gamma"))), swatch(page, "gamma"))
    # The toggle made before the loss still holds.
    assert at(shot, screen_of(page, centre_point(data, "beta"))) == WHITE


def test_numbers_get_a_colour_bar(page, blobs_map):
    open_map(page, str(blobs_map))
    page.select_option("#colour-by", label="score")
    page.wait_for_selector("#colour-bar:not([hidden])")
    assert page.inner_text("#bar-lo") == "0"
    assert page.inner_text("#bar-hi") == f"{0.5 * LONE:g}"
    page.evaluate("() => window.sgtsneView.drawn()")
    shot = screenshot(page)
    # Viridis: the first points dark purple, the last ones yellow.
    first, last = at(shot, screen_of(page, 3)), at(shot, screen_of(page, LONE - 3))
    assert first[2] > first[1] and last[0] > 150 and last[1] > 150 and last[2] < 120, (first, last)


def test_pan_and_zoom_move_the_points(page, blobs_map):
    open_map(page, str(blobs_map))
    x, y = screen_of(page, LONE)
    page.mouse.move(x + 30, y + 40)
    page.mouse.down()
    page.mouse.move(x + 130, y + 10, steps=5)
    page.mouse.up()
    moved = screen_of(page, LONE)
    assert abs(moved[0] - (x + 100)) < 0.5 and abs(moved[1] - (y - 30)) < 0.5
    # The wheel zooms around the cursor: the point under it stays, the others move out.
    other = screen_of(page, 0)
    page.mouse.move(*moved)
    page.mouse.wheel(0, -300)
    page.evaluate("() => window.sgtsneView.drawn()")
    after = screen_of(page, LONE)
    assert abs(after[0] - moved[0]) < 1 and abs(after[1] - moved[1]) < 1
    zoomed = screen_of(page, 0)
    assert abs(zoomed[0] - after[0]) > 1.5 * abs(other[0] - moved[0])
    shot = screenshot(page)
    assert at(shot, after) != WHITE


def test_png_export_and_density(page, blobs_map):
    open_map(page, str(blobs_map))
    page.check("#density")
    page.evaluate("() => window.sgtsneView.drawn()")
    shot = screenshot(page)
    assert max(at(shot, (5, 5))) < 40  # the dark background of density mode
    with page.expect_download() as d:
        page.click("#png")
    png = Image.open(d.value.path())
    canvas = page.eval_on_selector("#map", "c => [c.width, c.height]")
    assert list(png.size) == canvas


def test_3d_map_on_chosen_axes(page, sgtsne, data):
    out = data / "blobs3.html"
    view(sgtsne, data / "blobs3.npy", "--labels", data / "labels.csv", "-o", out)
    open_map(page, str(out))
    assert page.is_visible("#axes")
    # Axes 1–2: alpha and gamma lie on top of each other; axes 1–3 part them.
    page.select_option("#axes", "xy")
    page.evaluate("() => window.sgtsneView.drawn()")
    a, g = screen_of(page, 0), screen_of(page, 2 * PER_CLUSTER)
    assert abs(a[1] - g[1]) < 60
    page.select_option("#axes", "xz")
    page.evaluate("() => window.sgtsneView.drawn()")
    a, g = screen_of(page, 0), screen_of(page, 2 * PER_CLUSTER)
    assert abs(a[1] - g[1]) > 200
    shot = screenshot(page)
    assert close(at(shot, screen_of(page, centre_point(data, "gamma"))), swatch(page, "gamma"))
    # Rotating by dragging moves the points.
    page.select_option("#axes", "rotate")
    before = screen_of(page, 0)
    page.mouse.move(400, 300)
    page.mouse.down()
    page.mouse.move(480, 330, steps=5)
    page.mouse.up()
    assert screen_of(page, 0) != before


def test_served_page_shows_the_same_picture(page, sgtsne, data, blobs_map, browser_context):
    server = subprocess.Popen(
        [sgtsne, "view", str(data / "blobs.npy"), "--labels", str(data / "labels.csv"),
         "--meta", str(data / "meta.csv"), "--serve", "--port", "0", "--quiet"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        url = server.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", url), url
        open_map(page, url)
        served = screenshot(page)
        other = browser_context.new_page()
        open_map(other, str(blobs_map))
        from_file = screenshot(other)
        other.close()
        assert served.shape == from_file.shape
        assert (np.abs(served - from_file).max(axis=2) > 8).mean() < 0.001
    finally:
        server.terminate()
        server.wait(timeout=10)
