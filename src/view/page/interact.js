// Mouse and panel: pan, zoom, rotate, lasso, hover, the panel's controls, exports, and
// start-up (first paint timed for the tests and the benchmarks).

let drag = null, lassoPath = null, hoverTimer = 0;

function setupMouse() {
  const c = $("map");
  c.addEventListener("contextmenu", (e) => e.preventDefault());
  c.addEventListener("pointerdown", (e) => {
    c.setPointerCapture(e.pointerId);
    hideHover();
    if (state.lasso || e.shiftKey) {
      lassoPath = [[e.offsetX, e.offsetY]];
      return;
    }
    const rotate = state.dims === 3 && state.axes === "rotate" && e.button === 0 && !e.ctrlKey;
    drag = { x: e.offsetX, y: e.offsetY, rotate };
  });
  c.addEventListener("pointermove", (e) => {
    if (lassoPath) {
      lassoPath.push([e.offsetX, e.offsetY]);
      drawLasso();
      return;
    }
    if (drag) {
      const dx = e.offsetX - drag.x, dy = e.offsetY - drag.y;
      drag.x = e.offsetX;
      drag.y = e.offsetY;
      if (drag.rotate) {
        state.yaw += dx * 0.01;
        state.pitch = Math.max(-1.57, Math.min(1.57, state.pitch + dy * 0.01));
      } else {
        state.cx -= dx / state.scale;
        state.cy += dy / state.scale;
      }
      redrawMoving();
      return;
    }
    clearTimeout(hoverTimer);
    hoverTimer = setTimeout(() => hover(e.offsetX, e.offsetY), 40);
  });
  c.addEventListener("pointerup", () => {
    drag = null;
    if (lassoPath) {
      const path = lassoPath;
      lassoPath = null;
      clearOverlay();
      if (path.length > 2) select(insidePolygon(path));
    }
  });
  c.addEventListener("pointerleave", hideHover);
  c.addEventListener("wheel", (e) => {
    e.preventDefault();
    const rect = canvasSize(), f = Math.exp(-e.deltaY * 0.0015);
    // The map point under the cursor stays under it.
    const mx = state.cx + (e.offsetX - rect.w / 2) / state.scale;
    const my = state.cy - (e.offsetY - rect.h / 2) / state.scale;
    state.scale *= f;
    state.cx = mx - (e.offsetX - rect.w / 2) / state.scale;
    state.cy = my + (e.offsetY - rect.h / 2) / state.scale;
    redrawMoving();
  }, { passive: false });
}

function overlayContext() {
  const o = $("overlay"), dpr = window.devicePixelRatio || 1, rect = canvasSize();
  o.width = Math.round(rect.w * dpr);
  o.height = Math.round(rect.h * dpr);
  const ctx = o.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return ctx;
}

function drawLasso() {
  const ctx = overlayContext();
  ctx.beginPath();
  lassoPath.forEach(([x, y], k) => (k ? ctx.lineTo(x, y) : ctx.moveTo(x, y)));
  ctx.closePath();
  ctx.fillStyle = "rgba(40,40,40,0.08)";
  ctx.fill();
  ctx.strokeStyle = "#333";
  ctx.setLineDash([4, 3]);
  ctx.stroke();
}

function clearOverlay() {
  overlayContext();
}

function select(indices) {
  state.selection = indices;
  renderer.setSelection(indices);
  $("selection").textContent = indices.length ? indices.length.toLocaleString("en-US") + " selected" : "";
  redraw();
}

/** The hover box: the point's index (0-based, as in the embedding's rows) and its values. */
function hover(x, y) {
  const i = nearest(x, y, 8);
  if (i < 0) { hideHover(); return; }
  const lines = ["point " + i];
  for (const c of MANIFEST.columns) {
    if (!c.values) continue;
    const v = c.values[i];
    lines.push(c.name + ": " + (c.kind === "categories" ? c.names[v] : formatNumber(v)));
  }
  const box = $("hover"), rect = canvasSize();
  box.textContent = lines.join("\n");
  box.hidden = false;
  box.style.left = Math.min(x + 12, rect.w - box.offsetWidth - 4) + "px";
  box.style.top = Math.min(y + 12, rect.h - box.offsetHeight - 4) + "px";
  box.dataset.index = i;
}

function hideHover() {
  $("hover").hidden = true;
}

function download(name, blob) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

function setupPanel() {
  $("title").textContent = MANIFEST.title;
  $("count").textContent = state.n.toLocaleString("en-US") + " points, " + state.dims + "-D";
  const sel = $("colour-by");
  MANIFEST.columns.forEach((c, k) => sel.add(new Option(c.name, String(k))));
  $("colour-row").hidden = MANIFEST.columns.length === 0;
  sel.addEventListener("change", () => showColumn(MANIFEST.columns[Number(sel.value)]));
  $("search").addEventListener("input", (e) => {
    state.search = e.target.value;
    applyPalette();
  });
  $("show-all").addEventListener("click", () => { state.hidden.fill(false); applyPalette(); });
  $("hide-all").addEventListener("click", () => { state.hidden.fill(true); applyPalette(); });
  const size = $("size"), opacity = $("opacity");
  size.value = state.style.size;
  opacity.value = state.style.opacity;
  size.addEventListener("input", () => { state.style.size = Number(size.value); redraw(); });
  opacity.addEventListener("input", () => { state.style.opacity = Number(opacity.value); redraw(); });
  $("density").addEventListener("change", (e) => {
    state.style.density = e.target.checked;
    // Additive points need a low opacity, or everything is white at once.
    state.style.opacity = e.target.checked ? Math.min(state.style.opacity, densityOpacity()) : 1;
    opacity.value = state.style.opacity;
    redraw();
  });
  $("axes-row").hidden = state.dims !== 3;
  $("axes").addEventListener("change", (e) => { state.axes = e.target.value; redraw(); });
  $("lasso").addEventListener("click", () => {
    state.lasso = !state.lasso;
    $("lasso").setAttribute("aria-pressed", String(state.lasso));
  });
  $("clear").addEventListener("click", () => select(new Uint32Array(0)));
  $("download").addEventListener("click", () => {
    const rows = ["index"];
    for (const i of state.selection) rows.push(String(i));
    download("selection.csv", new Blob([rows.join("\n") + "\n"], { type: "text/csv" }));
  });
  $("png").addEventListener("click", () => {
    draw();
    $("map").toBlob((b) => download("map.png", b), "image/png");
  });
  $("reset").addEventListener("click", () => { resetView(); redraw(); });
  window.addEventListener("resize", redraw);
}

/** Density mode's starting opacity: lower as more points share the screen. */
function densityOpacity() {
  return Math.max(0.02, Math.min(0.5, 2000 / state.n));
}

/**
 * A WebGL context lost (the browser reset its GPU process, or reclaimed the context) takes
 * every buffer and texture with it: once it is back, the renderer is made again from the
 * data the page keeps, and the map redrawn as it was.
 */
function watchContext() {
  const c = $("map");
  c.addEventListener("webglcontextlost", (e) => {
    e.preventDefault();
    hook.contextLost = true;
    $("status").textContent = "the graphics context was lost; waiting for it to come back";
  });
  c.addEventListener("webglcontextrestored", () => {
    renderer = new Renderer(c);
    renderer.setCoordinates(state.q, state.comps);
    renderer.setPreview(PREVIEW_POINTS);
    for (const col of MANIFEST.columns) {
      for (const a of [col.values, col.gpu]) if (a) delete a.glBuffer;
    }
    applyColumn();
    if (state.selection.length) renderer.setSelection(state.selection);
    hook.contextLost = false;
    $("status").textContent = "";
    redraw();
  });
}

async function start() {
  const status = $("status");
  try {
    renderer = new Renderer($("map"));
    watchContext();
    const { q, comps } = await loadCoordinates();
    state.q = q;
    state.comps = comps;
    renderer.setCoordinates(q, comps);
    renderer.setPreview(PREVIEW_POINTS);
    setupPanel();
    setupMouse();
    resetView();
    await showColumn(MANIFEST.columns[0] || null);
    draw();
    renderer.finish();
    hook.firstPaintMs = performance.now();
    status.textContent = "";
    readyResolve();
    // Every column for the hover box, after the first paint.
    for (const c of MANIFEST.columns) await columnValues(c);
    hook.columnsLoaded = true;
  } catch (err) {
    status.textContent = "error: " + err.message;
    console.error(err);
    readyReject(err);
  }
}

let readyResolve, readyReject;

/** The test hook: where points are on screen, and when the first paint is done. */
const hook = {
  ready: new Promise((res, rej) => { readyResolve = res; readyReject = rej; }),
  firstPaintMs: null,
  columnsLoaded: false,
  contextLost: false,
  get n() { return state.n; },
  get frames() { return state.frames; },
  get selected() { return state.selection.length; },
  get selection() { return Array.from(state.selection); },
  /** Point i's position in page CSS pixels. */
  screenOf(i) {
    const t = transform(), m = state.comps, q = state.q, o = i * m;
    const q2 = m === 3 ? q[o + 2] : 0;
    const r = $("map").getBoundingClientRect();
    return [
      r.left + t.ax[0] * q[o] + t.ax[1] * q[o + 1] + t.ax[2] * q2 + t.bx,
      r.top + t.ay[0] * q[o] + t.ay[1] * q[o + 1] + t.ay[2] * q2 + t.by,
    ];
  },
  /** The colour (r, g, b) of category k of the column shown. */
  categoryColour: (k) => categoryColour(k),
  /** Resolves once every point is drawn after any queued change (a moving view first
   * comes to rest, a lost context comes back). */
  drawn() {
    return new Promise((res) => {
      const wait = () => (moving || frameQueued || hook.contextLost ? setTimeout(wait, 20)
        : requestAnimationFrame(() => requestAnimationFrame(res)));
      wait();
    });
  },
};
window.sgtsneView = hook;
start();
