// The WebGL 2 renderer: the quantised coordinates drawn as they are stored (normalised u16
// attributes), a colour per point from a palette texture (categories; alpha 0 hides a
// category) or a colour map (numbers), and an affine map from stored steps to pixels that
// the page also applies on the CPU, so hover and lasso find exactly what is drawn.

const VERTEX = `#version 300 es
in vec3 a_q;
in uint a_code;
in float a_value;
uniform vec3 u_ax, u_ay;
uniform vec2 u_b, u_canvas;
uniform float u_size;
uniform int u_mode;
uniform vec2 u_range;
uniform sampler2D u_palette;
uniform float u_alpha;
out vec4 v_colour;
const float MISSING = -1e30;
void main() {
  vec3 q = a_q * 65535.0;
  vec2 s = vec2(dot(u_ax, q), dot(u_ay, q)) + u_b;
  vec4 c;
  if (u_mode == 0) {
    int w = textureSize(u_palette, 0).x;
    c = texelFetch(u_palette, ivec2(int(a_code) % w, int(a_code) / w), 0);
  } else if (u_mode == 1) {
    float t = u_range.y > u_range.x ? (a_value - u_range.x) / (u_range.y - u_range.x) : 0.5;
    c = a_value <= MISSING ? vec4(0.75, 0.75, 0.75, 1.0)
                           : texture(u_palette, vec2(clamp(t, 0.0, 1.0), 0.5));
  } else {
    c = vec4(0.23, 0.43, 0.69, 1.0);
  }
  v_colour = vec4(c.rgb, c.a * u_alpha);
  gl_Position = c.a == 0.0 ? vec4(2.0, 2.0, 2.0, 1.0)
                           : vec4(s.x / u_canvas.x * 2.0 - 1.0, 1.0 - s.y / u_canvas.y * 2.0, 0.0, 1.0);
  gl_PointSize = u_size;
}`;

const FRAGMENT = `#version 300 es
precision mediump float;
in vec4 v_colour;
uniform bool u_round;
out vec4 colour;
void main() {
  if (u_round && length(gl_PointCoord - 0.5) > 0.5) discard;
  colour = v_colour;
}`;

/** Palette texture width: codes index it row by row. */
const PALETTE_WIDTH = 1024;

class Renderer {
  constructor(canvas) {
    const gl = canvas.getContext("webgl2", {
      antialias: false, preserveDrawingBuffer: true, premultipliedAlpha: false, alpha: false,
    });
    if (!gl) throw new Error("this browser has no WebGL 2, which the map needs");
    this.gl = gl;
    this.canvas = canvas;
    this.program = link(gl, VERTEX, FRAGMENT);
    this.loc = {};
    for (const a of ["a_q", "a_code", "a_value"]) this.loc[a] = gl.getAttribLocation(this.program, a);
    for (const u of ["u_ax", "u_ay", "u_b", "u_canvas", "u_size", "u_mode", "u_range", "u_palette", "u_alpha", "u_round"]) {
      this.loc[u] = gl.getUniformLocation(this.program, u);
    }
    this.vao = gl.createVertexArray();
    this.palette = gl.createTexture();
    this.selection = null;
    this.selectionCount = 0;
    this.preview = null;
  }

  /** Uploads the n × 3 (or fewer) u16 steps. */
  setCoordinates(q, comps) {
    const gl = this.gl;
    gl.bindVertexArray(this.vao);
    const buf = gl.createBuffer();
    gl.bindBuffer(gl.ARRAY_BUFFER, buf);
    gl.bufferData(gl.ARRAY_BUFFER, q, gl.STATIC_DRAW);
    gl.enableVertexAttribArray(this.loc.a_q);
    gl.vertexAttribPointer(this.loc.a_q, comps, gl.UNSIGNED_SHORT, true, 0, 0);
    this.n = q.length / comps;
  }

  /** Colours by category codes (an unsigned typed array) with `rgba` (4 bytes a code). */
  setCategories(codes, rgba) {
    const gl = this.gl;
    gl.bindVertexArray(this.vao);
    this.useAttribute("a_code", codes, () => {
      const type = codes.BYTES_PER_ELEMENT === 1 ? gl.UNSIGNED_BYTE
        : codes.BYTES_PER_ELEMENT === 2 ? gl.UNSIGNED_SHORT : gl.UNSIGNED_INT;
      gl.vertexAttribIPointer(this.loc.a_code, 1, type, 0, 0);
    });
    gl.disableVertexAttribArray(this.loc.a_value);
    this.setPalette(rgba);
    this.mode = 0;
  }

  /** Replaces the category palette (after a toggle or a search). */
  setPalette(rgba) {
    const gl = this.gl;
    const count = rgba.length / 4;
    const rows = Math.max(1, Math.ceil(count / PALETTE_WIDTH));
    const width = rows > 1 ? PALETTE_WIDTH : Math.max(1, count);
    const data = new Uint8Array(width * rows * 4);
    data.set(rgba);
    gl.bindTexture(gl.TEXTURE_2D, this.palette);
    gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA8, width, rows, 0, gl.RGBA, gl.UNSIGNED_BYTE, data);
    setFilter(gl, gl.NEAREST);
  }

  /** Colours by numbers (Float32Array, missing as -1e30) over `range` through `ramp`. */
  setNumbers(values, range, ramp) {
    const gl = this.gl;
    gl.bindVertexArray(this.vao);
    this.useAttribute("a_value", values, () => gl.vertexAttribPointer(this.loc.a_value, 1, gl.FLOAT, false, 0, 0));
    this.disableCodes();
    gl.bindTexture(gl.TEXTURE_2D, this.palette);
    gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA8, ramp.length / 4, 1, 0, gl.RGBA, gl.UNSIGNED_BYTE, ramp);
    setFilter(gl, gl.LINEAR);
    this.range = range;
    this.mode = 1;
  }

  /** One colour for every point (no columns). */
  setPlain() {
    const gl = this.gl;
    gl.bindVertexArray(this.vao);
    this.disableCodes();
    gl.disableVertexAttribArray(this.loc.a_value);
    this.setPalette(new Uint8Array([255, 255, 255, 255]));
    this.mode = 2;
  }

  /** Codes off: their constant must be an unsigned integer too, as the shader reads them. */
  disableCodes() {
    this.gl.disableVertexAttribArray(this.loc.a_code);
    this.gl.vertexAttribI4ui(this.loc.a_code, 0, 0, 0, 0);
  }

  /** Binds an attribute's buffer, made once per typed array. */
  useAttribute(name, array, pointer) {
    const gl = this.gl;
    if (!array.glBuffer) {
      array.glBuffer = gl.createBuffer();
      gl.bindBuffer(gl.ARRAY_BUFFER, array.glBuffer);
      gl.bufferData(gl.ARRAY_BUFFER, array, gl.STATIC_DRAW);
    }
    gl.bindBuffer(gl.ARRAY_BUFFER, array.glBuffer);
    gl.enableVertexAttribArray(this.loc[name]);
    pointer();
  }

  /** A random sample of at most `size` points (stratified: one in each of `size` equal
   * runs of indices), drawn alone while the view moves. */
  setPreview(size) {
    const n = this.n;
    if (n <= size) return;
    const idx = new Uint32Array(size), run = n / size;
    for (let k = 0; k < size; k++) idx[k] = Math.min(n - 1, Math.floor((k + Math.random()) * run));
    const gl = this.gl;
    gl.bindVertexArray(this.vao);
    this.preview = gl.createBuffer();
    gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, this.preview);
    gl.bufferData(gl.ELEMENT_ARRAY_BUFFER, idx, gl.STATIC_DRAW);
    this.previewCount = size;
  }

  /** The selected points (Uint32Array of indices), drawn again on top of the rest. */
  setSelection(indices) {
    const gl = this.gl;
    gl.bindVertexArray(this.vao);
    if (!this.selection) this.selection = gl.createBuffer();
    gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, this.selection);
    gl.bufferData(gl.ELEMENT_ARRAY_BUFFER, indices, gl.STATIC_DRAW);
    this.selectionCount = indices.length;
  }

  /**
   * Draws every point: `t` the affine map (ax, ay, bx, by) from steps to CSS pixels, `dpr`
   * device pixels per CSS pixel, `style` {size, opacity, density, faded (some colours are
   * translucent), background}; with `moving`, only the preview sample when there is one.
   */
  draw(t, dpr, style, moving) {
    const gl = this.gl;
    const w = this.canvas.width, h = this.canvas.height;
    gl.viewport(0, 0, w, h);
    const bg = style.background;
    gl.clearColor(bg[0], bg[1], bg[2], 1);
    gl.clear(gl.COLOR_BUFFER_BIT);
    gl.useProgram(this.program);
    gl.bindVertexArray(this.vao);
    if (this.mode === 1) gl.uniform2f(this.loc.u_range, this.range[0], this.range[1]);
    gl.uniform3fv(this.loc.u_ax, t.ax);
    gl.uniform3fv(this.loc.u_ay, t.ay);
    gl.uniform2f(this.loc.u_b, t.bx, t.by);
    gl.uniform2f(this.loc.u_canvas, w / dpr, h / dpr);
    gl.uniform1i(this.loc.u_mode, this.mode);
    gl.uniform1i(this.loc.u_palette, 0);
    gl.uniform1i(this.loc.u_round, style.size * dpr >= 3);
    gl.uniform1f(this.loc.u_size, style.size * dpr);
    gl.activeTexture(gl.TEXTURE0);
    gl.bindTexture(gl.TEXTURE_2D, this.palette);
    const selected = this.selectionCount > 0;
    // Opaque points need no blending, which software WebGL pays for per fragment.
    if (style.density || style.opacity < 1 || style.faded || selected) {
      gl.enable(gl.BLEND);
      // Density: colours add up where points pile, so crowded regions glow instead of
      // hiding how many points lie under the top one.
      gl.blendFunc(gl.SRC_ALPHA, style.density ? gl.ONE : gl.ONE_MINUS_SRC_ALPHA);
    } else {
      gl.disable(gl.BLEND);
    }
    gl.uniform1f(this.loc.u_alpha, style.opacity * (selected ? 0.15 : 1));
    if (moving && this.preview) {
      gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, this.preview);
      gl.drawElements(gl.POINTS, this.previewCount, gl.UNSIGNED_INT, 0);
    } else {
      gl.drawArrays(gl.POINTS, 0, this.n);
    }
    if (selected) {
      gl.uniform1f(this.loc.u_alpha, Math.max(style.opacity, 0.5));
      gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, this.selection);
      gl.drawElements(gl.POINTS, this.selectionCount, gl.UNSIGNED_INT, 0);
    }
  }

  /** Waits for the drawing to be done (a one-pixel read blocks until it is). */
  finish() {
    const px = new Uint8Array(4);
    this.gl.readPixels(0, 0, 1, 1, this.gl.RGBA, this.gl.UNSIGNED_BYTE, px);
  }
}

function setFilter(gl, filter) {
  gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, filter);
  gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAG_FILTER, filter);
  gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_WRAP_S, gl.CLAMP_TO_EDGE);
  gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_WRAP_T, gl.CLAMP_TO_EDGE);
}

function link(gl, vs, fs) {
  const program = gl.createProgram();
  for (const [type, src] of [[gl.VERTEX_SHADER, vs], [gl.FRAGMENT_SHADER, fs]]) {
    const s = gl.createShader(type);
    gl.shaderSource(s, src);
    gl.compileShader(s);
    if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new Error("shader: " + gl.getShaderInfoLog(s));
    gl.attachShader(program, s);
  }
  gl.linkProgram(program);
  if (!gl.getProgramParameter(program, gl.LINK_STATUS)) throw new Error("program: " + gl.getProgramInfoLog(program));
  return program;
}
