// Live models on the Transformer Lab site: the chapter-13 character GPT and all-MiniLM-L6-v2
// run in the reader's browser with ONNX Runtime Web, from this site's own _static folder.
//
// Every element <div class="tl-live" data-tl-live="gpt|minilm" data-tl-options="{...}"> on a
// page becomes a panel (transformer_lab.viz.live writes them). The model and ONNX Runtime
// load on first use, streamed so that the panel can say how much has arrived. The functions the
// panels use are also the page's API for tests:
// window.TransformerLabLive.{load, gptRun, gptGenerate, gptForward, minilmRun, idsProblem,
// cleanPrompt, nextTokenProbs, ...}.
// See scripts/site/live/README.md for the files and their inputs and outputs.
(function () {
  "use strict";

  var loaded = {}; // url -> Promise of a <script> load
  var models = {}; // name -> Promise of {session, meta, tokenizer, backend, loadMs}
  var loadedModels = {}; // name -> true once its promise has resolved
  var ortReady = null;
  var settings = {backend: null}; // "wasm" or "webgpu" forces a backend (tests, benchmarks)

  function staticUrl(path) {
    // Sphinx writes the path from the page to the site root into <html data-content_root>
    var root = document.documentElement.dataset.content_root || "";
    return new URL(root + "_static/" + path, document.baseURI).href;
  }

  function loadScript(url) {
    if (!loaded[url]) {
      loaded[url] = new Promise(function (resolve, reject) {
        var script = document.createElement("script");
        script.src = url;
        script.onload = resolve;
        script.onerror = function () { reject(new Error("could not load " + url)); };
        document.head.appendChild(script);
      });
    }
    return loaded[url];
  }

  function fetchJson(url) {
    return fetch(url).then(function (reply) {
      if (!reply.ok) throw new Error(url + " answered " + reply.status);
      return reply.json();
    });
  }

  // The large files (ONNX Runtime's WebAssembly, the models) are read as streams, and every
  // chunk is noted here so that a panel can show how much of them has arrived.
  var downloads = {}; // url -> {received, total}; total 0 when the server does not say
  var watchers = [];

  function noteDownload(url, received, total) {
    downloads[url] = {received: received, total: total};
    watchers.slice().forEach(function (watch) { watch(); });
  }

  // The bytes at url as a Uint8Array.
  function fetchBytes(url) {
    return fetch(url).then(function (reply) {
      if (!reply.ok) throw new Error(url + " answered " + reply.status);
      // a compressed reply's Content-Length counts the compressed bytes, not the ones read
      var total = reply.headers.get("Content-Encoding") ? 0
        : Number(reply.headers.get("Content-Length")) || 0;
      noteDownload(url, 0, total);
      if (!reply.body || !reply.body.getReader) {
        return reply.arrayBuffer().then(function (buffer) {
          noteDownload(url, buffer.byteLength, buffer.byteLength);
          return new Uint8Array(buffer);
        });
      }
      var reader = reply.body.getReader(), chunks = [], received = 0;
      function next() {
        return reader.read().then(function (part) {
          if (part.done) {
            var bytes = new Uint8Array(received), at = 0;
            chunks.forEach(function (chunk) { bytes.set(chunk, at); at += chunk.length; });
            noteDownload(url, received, received);
            return bytes;
          }
          chunks.push(part.value);
          received += part.value.length;
          noteDownload(url, received, total >= received ? total : 0);
          return next();
        });
      }
      return next();
    });
  }

  // onProgress(received bytes, total bytes or 0 while unknown) for the files at urls, now and
  // on every chunk until the returned function is called.
  function followDownloads(urls, onProgress) {
    function report() {
      var received = 0, total = 0;
      urls.forEach(function (url) {
        var seen = downloads[url];
        received += seen ? seen.received : 0;
        total = seen && seen.total && total !== null ? total + seen.total : null;
      });
      onProgress(received, total || 0);
    }
    watchers.push(report);
    report();
    return function () {
      var i = watchers.indexOf(report);
      if (i >= 0) watchers.splice(i, 1);
    };
  }

  function threads() {
    // WebAssembly threads need SharedArrayBuffer, which browsers give only to
    // cross-origin-isolated pages; elsewhere ONNX Runtime runs on one thread.
    if (!window.crossOriginIsolated) return 1;
    return Math.max(1, Math.min(4, navigator.hardwareConcurrency || 1));
  }

  // the WebAssembly build that ort.min.js runs (for both the "wasm" and "webgpu" backends)
  var ORT_WASM = "ort-wasm-simd-threaded.jsep.wasm";

  function loadOrt() {
    if (!ortReady) {
      ortReady = Promise.all([
        loadScript(staticUrl("ort/ort.min.js")), fetchBytes(staticUrl("ort/" + ORT_WASM)),
      ]).then(function (parts) {
        var ort = window.ort;
        if (!ort || !ort.InferenceSession) throw new Error("ort.min.js did not define ort");
        ort.env.wasm.wasmPaths = staticUrl("ort/"); // never a CDN
        ort.env.wasm.wasmBinary = parts[1]; // read here, where its progress can be shown
        ort.env.wasm.numThreads = threads();
        ort.env.wasm.proxy = false;
        ort.env.logLevel = "error";
        return ort;
      });
      ortReady.catch(function () { ortReady = null; }); // a later use tries again
    }
    return ortReady;
  }

  function webgpuWanted() {
    if (settings.backend) return Promise.resolve(settings.backend === "webgpu");
    if (!navigator.gpu || !navigator.gpu.requestAdapter) return Promise.resolve(false);
    return navigator.gpu.requestAdapter().then(
      function (adapter) { return !!adapter; },
      function () { return false; }
    );
  }

  // a session on the model's bytes: WebGPU where the browser has an adapter that runs the
  // graph, WebAssembly otherwise
  function createSession(ort, bytes, gpu) {
    var wasm = function () {
      return ort.InferenceSession.create(bytes, {executionProviders: ["wasm"]}).then(
        function (session) { return {session: session, backend: "wasm"}; }
      );
    };
    if (!gpu) return wasm();
    return ort.InferenceSession.create(bytes, {executionProviders: ["webgpu"]}).then(
      function (session) { return {session: session, backend: "webgpu"}; },
      function () { return wasm(); } // an adapter that cannot run the graph: WebAssembly
    );
  }

  function load(name) {
    if (name !== "gpt" && name !== "minilm") {
      return Promise.reject(new Error("no live model named " + JSON.stringify(name)));
    }
    if (!models[name]) {
      var start = performance.now();
      // ONNX Runtime's WebAssembly and the model download side by side
      models[name] = Promise.all([
        loadOrt(),
        fetchJson(staticUrl("live/" + name + ".json")),
        loadScript(staticUrl("live/tokenizers.js")),
        fetchBytes(staticUrl("live/" + name + ".onnx")),
        webgpuWanted(),
      ]).then(function (parts) {
        var ort = parts[0], meta = parts[1];
        var T = window.TransformerLabTokenizers;
        if (!T) throw new Error("tokenizers.js did not define TransformerLabTokenizers");
        var tokenizer = name === "gpt" ? new T.CharTokenizer(meta) : new T.WordPieceTokenizer(meta);
        return createSession(ort, parts[3], parts[4]).then(function (made) {
          loadedModels[name] = true;
          return {
            name: name, session: made.session, backend: made.backend, meta: meta,
            tokenizer: tokenizer, loadMs: performance.now() - start,
          };
        });
      });
      models[name].catch(function () { delete models[name]; }); // a later use tries again
    }
    return models[name];
  }

  function backendText(model) {
    var ort = window.ort;
    var version = ort && ort.env && ort.env.versions ? ort.env.versions.web || "" : "";
    var what = model.backend === "webgpu" ? "WebGPU"
      : "WebAssembly, " + threads() + (threads() === 1 ? " thread" : " threads");
    return "ONNX Runtime Web " + version + " (" + what + ")";
  }

  // A session runs one inference at a time (a second run while one is under way fails or
  // never ends): each run waits for the one before it.
  function runSession(model, feeds) {
    var turn = (model.busy || Promise.resolve()).then(function () { return model.session.run(feeds); });
    model.busy = turn.catch(function () {});
    return turn;
  }

  function ids64(ids) {
    return new window.ort.Tensor("int64", BigInt64Array.from(ids, function (i) { return BigInt(i); }),
      [1, ids.length]);
  }

  var MODEL_NAMES = {gpt: "the GPT", minilm: "MiniLM"};

  // What is wrong with ids as input to model, or null when every id names one of its tokens.
  // A session is never run on an id outside [0, d_vocab): the graph reads the embedding table
  // with ONNX's Gather, which takes a negative id from the end of the table (-1 as the last
  // token) and answers as if nothing were wrong.
  function idsProblem(model, ids) {
    var d = model.meta.vocab.length;
    for (var i = 0; i < ids.length; i++) {
      var id = ids[i];
      if (!Number.isInteger(id) || id < 0 || id >= d) {
        return (MODEL_NAMES[model.name] || "the model") + " reads token ids 0 to " + (d - 1) +
          " (its " + d + " tokens), got " + String(id) + " at position " + i;
      }
    }
    return null;
  }

  // ---- the GPT -----------------------------------------------------------------------------

  // logits Float32Array [pos * d_vocab], attention Float32Array [n_layers, n_heads, pos, pos]
  function gptForward(model, ids) {
    var n = model.meta.n_ctx;
    if (ids.length < 1 || ids.length > n) {
      return Promise.reject(new Error("the GPT reads 1 to " + n + " characters, got " + ids.length));
    }
    var bad = idsProblem(model, ids);
    if (bad) return Promise.reject(new Error(bad));
    return runSession(model, {ids: ids64(ids)}).then(function (out) {
      return {ids: ids, logits: out.logits.data, attention: out.attention.data, pos: ids.length};
    });
  }

  function lastWindow(ids, n) { return ids.slice(Math.max(0, ids.length - n)); }

  // A prompt in the GPT's alphabet (the characters of the plays it was trained on). A
  // character with an obvious equivalent there is replaced by it: curly quotes by straight
  // ones, dashes by the plays' "-" and "--", an ellipsis by "...", other spaces and tabs by a
  // space, accented letters by the bare letter, ligatures and full-width forms by their
  // letters. Any other character is dropped. Returns {text, changed: [[from, to], ...],
  // dropped: [character, ...]}, each character listed once.
  var EQUIVALENTS = {
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u00b4": "'",
    "`": "'", "\u2039": "'", "\u203a": "'",
    "\u201c": "\"", "\u201d": "\"", "\u201e": "\"", "\u201f": "\"", "\u2033": "\"",
    "\u00ab": "\"", "\u00bb": "\"", "\uff02": "\"",
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2212": "-", "\u2043": "-",
    "\u2014": "--", "\u2015": "--",
    "\u2026": "...", "\t": " ", "\r": "\n", "\u0085": "\n", "\u2028": "\n", "\u2029": "\n",
    "\u00e6": "ae", "\u00c6": "AE", "\u0153": "oe", "\u0152": "OE", "\u00df": "ss",
    "\u00f8": "o", "\u00d8": "O", "\u0142": "l", "\u0141": "L", "\u0111": "d", "\u0110": "D",
    "\u00a1": "!", "\u00bf": "?",
  };
  var SPACES = /[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]/;

  function equivalentIn(known, ch) {
    var code = ch.codePointAt(0), candidates = [];
    if (EQUIVALENTS[ch] !== undefined) candidates.push(EQUIVALENTS[ch]);
    if (SPACES.test(ch)) candidates.push(" ");
    if (code >= 0xff01 && code <= 0xff5e) candidates.push(String.fromCodePoint(code - 0xfee0));
    if (code >= 0xfb00 && code <= 0xfb06) candidates.push(ch.normalize("NFKD"));
    candidates.push(ch.normalize("NFD").replace(/[\u0300-\u036f]/g, ""));
    for (var i = 0; i < candidates.length; i++) {
      var c = candidates[i];
      if (c && c !== ch && Array.from(c).every(function (x) { return known.has(x); })) return c;
    }
    return null;
  }

  function cleanPrompt(text, vocab) {
    var known = new Set(vocab), out = "", changed = new Map(), dropped = new Set();
    for (var ch of String(text).replace(/\r\n/g, "\n")) {
      if (known.has(ch)) { out += ch; continue; }
      var same = equivalentIn(known, ch);
      if (same === null) {
        dropped.add(ch);
      } else {
        out += same;
        changed.set(ch, same);
      }
    }
    return {text: out, changed: Array.from(changed.entries()), dropped: Array.from(dropped)};
  }

  // The distribution transformer_lab.generation.sampling.next_token_probs draws from:
  // softmax(logits / T), then top-k (ties at the k-th value kept), then top-p (a token stays
  // while the mass ranked strictly before it is below p); temperature 0 is greedy (argmax).
  function nextTokenProbs(logits, temperature, topK, topP) {
    var v = logits.length, i;
    var z = new Float64Array(v);
    if (!(temperature > 0)) {
      z[argmax(logits)] = 1;
      return Array.from(z);
    }
    for (i = 0; i < v; i++) z[i] = logits[i] / temperature;
    if (topK) {
      var kth = Array.from(z).sort(function (a, b) { return b - a; })[Math.min(topK, v) - 1];
      for (i = 0; i < v; i++) if (z[i] < kth) z[i] = -Infinity;
    }
    if (topP && topP < 1) {
      var order = Array.from(z.keys()).sort(function (a, b) { return z[b] - z[a] || a - b; });
      var p = softmax(order.map(function (j) { return z[j]; }));
      var before = 0, drop = [];
      for (i = 0; i < v; i++) {
        if (before >= topP) drop.push(order[i]);
        before += p[i];
      }
      drop.forEach(function (j) { z[j] = -Infinity; });
    }
    return softmax(Array.from(z));
  }

  function argmax(values) {
    var best = 0;
    for (var i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
    return best;
  }

  function softmax(values) {
    var m = Math.max.apply(null, values), sum = 0;
    var e = values.map(function (x) { var y = Math.exp(x - m); sum += y; return y; });
    return e.map(function (y) { return y / sum; });
  }

  function draw(probs, random) {
    var u = random(), total = 0;
    for (var i = 0; i < probs.length; i++) {
      total += probs[i];
      if (u < total) return i;
    }
    return argmax(probs);
  }

  function seeded(seed) { // mulberry32: a reproducible stream for a given seed
    var a = seed >>> 0;
    return function () {
      a = (a + 0x6d2b79f5) >>> 0;
      var t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  function pause() { return new Promise(function (resolve) { setTimeout(resolve, 0); }); }

  // Extend the prompt by n characters; onText(new text) after each. The window is the last
  // n_ctx characters, as in transformer_lab.generation.sampling.generate.
  function gptGenerate(prompt, n, options, onText) {
    options = options || {};
    return load("gpt").then(function (model) {
      var ids = model.tokenizer.encode(prompt);
      if (!ids.length) throw new Error("type a prompt of at least one character");
      var d = model.meta.vocab.length;
      var random = options.seed == null ? Math.random : seeded(options.seed);
      var temperature = options.greedy ? 0 : options.temperature == null ? 1 : options.temperature;
      var made = [], lastPause = performance.now(), stop = options.shouldStop || function () {
        return false;
      };
      function step() {
        if (made.length >= n || stop()) return model.tokenizer.decode(made);
        return gptForward(model, lastWindow(ids, model.meta.n_ctx)).then(function (out) {
          var row = out.logits.subarray((out.pos - 1) * d, out.pos * d);
          var next = temperature === 0 ? argmax(row)
            : draw(nextTokenProbs(row, temperature, options.topK, options.topP), random);
          ids.push(next);
          made.push(next);
          if (onText) onText(model.tokenizer.decode([next]));
          if (performance.now() - lastPause < 30) return step();
          lastPause = performance.now();
          return pause().then(step); // let the page draw what streamed so far
        });
      }
      return step();
    });
  }

  // The model on the last n_ctx characters of text: ids, characters, logits [pos][d_vocab],
  // attention [n_layers][n_heads][pos][pos] as plain arrays.
  function gptRun(text) {
    return load("gpt").then(function (model) {
      var ids = lastWindow(model.tokenizer.encode(text), model.meta.n_ctx);
      return gptForward(model, ids).then(function (out) {
        var m = model.meta;
        return {
          ids: ids, tokens: ids.map(function (i) { return m.vocab[i]; }),
          logits: nest(out.logits, [out.pos, m.vocab.length]),
          attention: nest(out.attention, [m.n_layers, m.n_heads, out.pos, out.pos]),
          backend: model.backend,
        };
      });
    });
  }

  function nest(flat, shape) {
    if (shape.length === 1) return Array.from(flat);
    var size = flat.length / shape[0], rows = [];
    for (var i = 0; i < shape[0]; i++) rows.push(nest(flat.subarray(i * size, (i + 1) * size), shape.slice(1)));
    return rows;
  }

  // ---- MiniLM ------------------------------------------------------------------------------

  // The model on text, cut to its first max_positions tokens as the package's tokenizer cuts
  // it: ids, tokens, attention [n_layers][n_heads][pos][pos], the sentence vector, and
  // length (the tokens of the whole text, [CLS] and [SEP] included) and cut (how many of
  // them the model did not read).
  function minilmRun(text) {
    return load("minilm").then(function (model) {
      var enc = model.tokenizer.encode(text);
      var m = model.meta, n = enc.ids.length;
      var length = model.tokenizer.tokenize(text).length + 2;
      if (n > m.max_positions) {
        throw new Error("the sentence has " + n + " tokens; MiniLM reads at most " + m.max_positions);
      }
      var bad = idsProblem(model, enc.ids);
      if (bad) throw new Error(bad);
      return runSession(model, {input_ids: ids64(enc.ids)}).then(function (out) {
        return {
          ids: enc.ids, tokens: enc.tokens, backend: model.backend,
          attention: nest(out.attention.data, [m.n_layers, m.n_heads, n, n]),
          sentence: Array.from(out.sentence.data), length: length, cut: length - n,
        };
      });
    });
  }

  function cosine(a, b) {
    var dot = 0, na = 0, nb = 0;
    for (var i = 0; i < a.length; i++) { dot += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; }
    return dot / Math.sqrt(na * nb);
  }

  // ---- drawing -----------------------------------------------------------------------------

  // a heatmap shows at most this many tokens (the GPT's window is 64 characters): beyond it
  // the cells and their labels would be too small to read
  var MAX_DRAWN = 64;

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else if (k === "class") node.className = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) {
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }

  function label(text, control) {
    return el("label", {class: "tl-live-control"}, [el("span", {text: text}), control]);
  }

  function shown(token) {
    if (token === " ") return "␣";
    if (token === "\n") return "↵";
    return token;
  }

  // A character as a note names it: itself, or its code point when it cannot be seen.
  function named(ch) {
    if (ch === " ") return "a space";
    if (ch === "\n") return "a line break";
    if (/^[\p{C}\p{Z}\p{M}]+$/u.test(ch)) {
      return Array.from(ch).map(function (c) {
        return "U+" + c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
      }).join(" ");
    }
    return ch;
  }

  function megabytes(bytes) { return (bytes / 1e6).toFixed(1); }

  // One head's pattern on a canvas: rows are queries, columns keys, darker is more weight.
  // The cells fit the width of the canvas's box where they can stay readable (at least 7 px);
  // the box scrolls when they cannot.
  function heatmap(canvas, pattern, tokens, caption) {
    var n = tokens.length, cell = Math.max(7, Math.min(30, Math.floor(520 / n)));
    var labels = tokens.map(shown);
    var ctx = canvas.getContext("2d"), font = "", margin = 0;
    function measure() { // the labels' font follows the cell; the margin holds the longest
      font = Math.min(13, cell) + "px sans-serif";
      ctx.font = font;
      margin = Math.min(110, 10 + Math.max.apply(null, labels.map(function (t) {
        return ctx.measureText(t).width;
      })));
    }
    measure();
    var room = canvas.parentNode && canvas.parentNode.clientWidth;
    var fitted = room ? Math.max(7, Math.min(cell, Math.floor((room - margin - 4) / n))) : cell;
    if (fitted < cell) {
      cell = fitted;
      measure();
    }
    var ratio = window.devicePixelRatio || 1, size = Math.ceil(margin + n * cell + 4);
    canvas.width = size * ratio;
    canvas.height = size * ratio;
    canvas.style.width = size + "px";
    canvas.style.height = size + "px";
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, size, size);
    for (var q = 0; q < n; q++) {
      for (var k = 0; k < n; k++) {
        var w = pattern[q][k];
        var light = Math.round(255 - 215 * w);
        ctx.fillStyle = "rgb(" + light + "," + Math.round(255 - 160 * w) + ",255)";
        ctx.fillRect(margin + k * cell, margin + q * cell, cell - (cell > 10 ? 1 : 0),
          cell - (cell > 10 ? 1 : 0));
      }
    }
    ctx.fillStyle = "#222";
    ctx.font = font;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    labels.forEach(function (t, i) { ctx.fillText(t, margin - 4, margin + (i + 0.5) * cell); });
    labels.forEach(function (t, i) {
      ctx.save();
      ctx.translate(margin + (i + 0.5) * cell, margin - 4);
      ctx.rotate(-Math.PI / 2);
      ctx.textAlign = "left";
      ctx.fillText(t, 0, 0);
      ctx.restore();
    });
    canvas.hidden = false;
    canvas.setAttribute("role", "img");
    canvas.setAttribute("aria-label", caption + " (rows: queries, columns: keys)");
    canvas.onmousemove = function (event) {
      var box = canvas.getBoundingClientRect();
      var k = Math.floor((event.clientX - box.left - margin) / cell);
      var q = Math.floor((event.clientY - box.top - margin) / cell);
      canvas.title = q >= 0 && k >= 0 && q < n && k < n
        ? "query " + labels[q] + " (" + q + ") -> key " + labels[k] + " (" + k + "): " + pattern[q][k].toFixed(3)
        : "";
    };
  }

  function clearHeatmap(canvas) {
    canvas.hidden = true;
    canvas.width = canvas.height = 0;
    canvas.removeAttribute("aria-label");
    canvas.title = "";
  }

  // the first MAX_DRAWN rows and columns of a pattern
  function firstTokens(pattern, tokens) {
    if (tokens.length <= MAX_DRAWN) return {pattern: pattern, tokens: tokens};
    return {
      pattern: pattern.slice(0, MAX_DRAWN).map(function (row) { return row.slice(0, MAX_DRAWN); }),
      tokens: tokens.slice(0, MAX_DRAWN),
    };
  }

  function headControls(meta, redraw, options) {
    var layer = el("select", {"aria-label": "layer"});
    for (var l = 0; l < meta.n_layers; l++) layer.appendChild(el("option", {value: l, text: "layer " + l}));
    layer.value = String(Math.min(options.layer || 0, meta.n_layers - 1));
    var head = el("input", {type: "range", min: 0, max: meta.n_heads - 1, "aria-label": "head"});
    head.value = String(Math.min(options.head || 0, meta.n_heads - 1));
    var headValue = el("output", {text: head.value});
    layer.onchange = redraw;
    head.oninput = function () { headValue.textContent = head.value; redraw(); };
    return {
      layer: layer, head: head,
      box: el("div", {class: "tl-live-row"}, [label("layer", layer), label("head", head), headValue]),
      value: function () { return [Number(layer.value), Number(head.value)]; },
    };
  }

  function onResize(redraw) {
    var timer = null;
    window.addEventListener("resize", function () {
      clearTimeout(timer);
      timer = setTimeout(redraw, 150);
    });
  }

  function setStatus(panel, text, kind) {
    var status = panel.querySelector(".tl-live-status");
    status.textContent = text;
    status.className = "tl-live-status" + (kind ? " tl-live-" + kind : "");
    var bar = panel.querySelector(".tl-live-progress");
    if (bar && kind !== "loading") bar.hidden = true;
  }

  // An input the panel refuses: its message is shown as it is.
  function inputError(message) {
    var err = new Error(message);
    err.input = true;
    return err;
  }

  function failed(panel, err, modelLoaded) {
    var reason = err && err.message ? err.message : String(err);
    if (err && err.input) {
      setStatus(panel, reason, "error");
      return;
    }
    if (modelLoaded) { // the model runs here; this input is what it cannot read
      setStatus(panel, "Cannot run the model on this input: " + reason, "error");
      return;
    }
    setStatus(panel, "The live model cannot run in this browser (" + reason + "). The precomputed " +
      "exploration on this page still works without it.", "error");
  }

  // load(name) with the panel's status saying how much of the model and of ONNX Runtime's
  // WebAssembly has arrived, then that the model is being prepared.
  function loadShowingProgress(panel, name, what) {
    if (loadedModels[name]) return load(name);
    var urls = [staticUrl("live/" + name + ".onnx")], wasm = staticUrl("ort/" + ORT_WASM);
    var seen = downloads[wasm];
    if (!(seen && seen.total && seen.received >= seen.total)) urls.push(wasm);
    var bar = panel.querySelector(".tl-live-progress"), done = false;
    var loading = load(name);
    loading.then(function () { done = true; }, function () { done = true; });
    var stop = followDownloads(urls, function (received, total) {
      if (done) return;
      bar.hidden = false;
      if (total && received >= total) {
        bar.removeAttribute("value");
        setStatus(panel, "Preparing " + what + " to run in your browser...", "loading");
        return;
      }
      var text = "Loading " + what + " and ONNX Runtime Web: " + megabytes(received) + " MB";
      if (total) {
        bar.max = total;
        bar.value = received;
        text += " of " + megabytes(total) + " MB";
      } else {
        bar.removeAttribute("value");
      }
      setStatus(panel, text + "...", "loading");
    });
    return loading.then(function (model) {
      stop();
      bar.hidden = true;
      return model;
    }, function (err) {
      stop();
      bar.hidden = true;
      throw err;
    });
  }

  function gptPanel(panel, options) {
    var prompt = el("textarea", {rows: 3, class: "tl-live-text", "aria-label": "prompt",
      enterkeyhint: "go"});
    prompt.value = options.prompt || "ROMEO:\n";
    var temperature = el("input", {type: "number", min: 0.05, max: 3, step: 0.05, value: 0.8});
    var topK = el("input", {type: "number", min: 0, step: 1, value: 0, title: "0 = off"});
    var topP = el("input", {type: "number", min: 0.05, max: 1, step: 0.05, value: 1, title: "1 = off"});
    var greedy = el("input", {type: "checkbox"});
    var count = el("input", {type: "number", min: 1, max: 2000, step: 1, value: options.n_chars || 200});
    var button = el("button", {type: "button", class: "tl-live-button", text: "Generate"});
    var adapted = el("p", {class: "tl-live-adapted", "aria-live": "polite"});
    adapted.hidden = true;
    var promptShown = el("span", {class: "tl-live-prompt", title: "the prompt, as the model read it"});
    var continuation = el("span", {class: "tl-live-continuation", title: "what the model wrote"});
    var output = el("pre", {class: "tl-live-output", "aria-live": "polite",
      "aria-label": "the prompt, then the model's continuation"}, [promptShown, continuation]);
    var canvas = el("canvas", {class: "tl-live-heatmap"});
    canvas.hidden = true;
    var caption = el("p", {class: "tl-live-note", text: "Attention over the prompt (its last n_ctx " +
      "characters): rows are queries, columns keys."});
    var meta = null, controls = null, attention = null, tokens = null, readyText = "";
    var running = false, stopped = false, shownFor = 0;

    function redraw() {
      if (!attention) return;
      var lh = controls.value();
      heatmap(canvas, attention[lh[0]][lh[1]], tokens, "GPT attention, layer " + lh[0] + ", head " + lh[1]);
    }
    function clearResults() {
      shownFor += 1; // an attention still being computed is not drawn
      attention = tokens = null;
      clearHeatmap(canvas);
      promptShown.textContent = "";
      continuation.textContent = "";
    }
    function showAttention(text) {
      var mine = ++shownFor;
      return gptRun(text).then(function (out) {
        if (mine !== shownFor) return;
        attention = out.attention;
        tokens = out.tokens;
        redraw();
      });
    }
    // the note under the prompt: what was changed or dropped to fit the model's alphabet
    function showAdapted(clean) {
      adapted.textContent = "";
      adapted.hidden = !clean.changed.length && !clean.dropped.length;
      if (adapted.hidden) return;
      var parts = ["The model knows only the " + meta.vocab.length + " characters of the plays, so "];
      var targets = new Map();
      clean.changed.forEach(function (pair) {
        targets.set(pair[1], (targets.get(pair[1]) || []).concat([pair[0]]));
      });
      var said = [];
      targets.forEach(function (sources, target) {
        var piece = [];
        sources.forEach(function (s, i) {
          if (i) piece.push(" ");
          piece.push(el("code", {text: named(s)}));
        });
        piece.push(" became ", el("code", {text: named(target)}));
        said.push(piece);
      });
      if (clean.dropped.length) {
        var shownDrops = clean.dropped.slice(0, 12), piece = [];
        shownDrops.forEach(function (s, i) {
          if (i) piece.push(" ");
          piece.push(el("code", {text: named(s)}));
        });
        if (clean.dropped.length > shownDrops.length) {
          piece.push(" and " + (clean.dropped.length - shownDrops.length) + " more");
        }
        piece.push(" " + (clean.dropped.length === 1 ? "was" : "were") + " dropped");
        said.push(piece);
      }
      said.forEach(function (piece, i) {
        if (i) parts.push(i === said.length - 1 ? " and " : ", ");
        parts = parts.concat(piece);
      });
      parts.push(".");
      parts.forEach(function (part) {
        adapted.appendChild(typeof part === "string" ? document.createTextNode(part) : part);
      });
    }
    // the text the model reads, once its alphabet is known; refuses a prompt with nothing left
    function readPrompt() {
      var clean = cleanPrompt(prompt.value, meta.vocab);
      showAdapted(clean);
      if (!clean.text) {
        throw inputError(prompt.value
          ? "None of the prompt's characters is in the model's alphabet: type some letters."
          : "Type a prompt: the model continues the text you give it.");
      }
      return clean.text;
    }
    function ensure() {
      return loadShowingProgress(panel, "gpt", "the GPT").then(function (model) {
        if (!meta) {
          meta = model.meta;
          controls = headControls(meta, redraw, options);
          attentionBox.insertBefore(controls.box, figure);
          caption.textContent = "Attention over the prompt (its last " + meta.n_ctx + " characters): " +
            "rows are queries, columns keys.";
        }
        readyText = "Running in your browser: " + backendText(model) + "; model loaded in " +
          Math.round(model.loadMs) + " ms.";
        setStatus(panel, readyText, "ready");
        return model;
      });
    }
    function run() {
      if (running) return;
      clearResults();
      if (!prompt.value) {
        adapted.hidden = true;
        failed(panel, inputError("Type a prompt: the model continues the text you give it."));
        return;
      }
      running = true;
      stopped = false;
      button.textContent = "Stop";
      var start = performance.now(), made = 0;
      ensure().then(function () {
        var text = readPrompt();
        promptShown.textContent = text;
        start = performance.now();
        return showAttention(text).then(function () {
          return gptGenerate(text, Math.max(1, Number(count.value) || 1), {
            greedy: greedy.checked, temperature: Number(temperature.value),
            topK: Number(topK.value) || null, topP: Number(topP.value) < 1 ? Number(topP.value) : null,
            shouldStop: function () { return stopped; },
          }, function (piece) {
            continuation.textContent += piece;
            made += 1;
            output.scrollTop = output.scrollHeight;
          });
        });
      }).then(function () {
        var seconds = (performance.now() - start) / 1000;
        setStatus(panel, readyText.replace(/\.$/, "") + "; " + made + " characters in " +
          seconds.toFixed(1) + " s.", "ready");
      }).catch(function (err) {
        clearResults();
        failed(panel, err, meta !== null);
      }).then(function () {
        running = false;
        button.textContent = "Generate";
      });
    }
    button.onclick = function () {
      if (running) stopped = true;
      else run();
    };
    // Enter generates; Shift+Enter starts a new line
    prompt.addEventListener("keydown", function (event) {
      if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
      event.preventDefault();
      run();
    });
    // the note follows the typing, once the model's alphabet is known
    prompt.addEventListener("input", function () {
      if (meta) showAdapted(cleanPrompt(prompt.value, meta.vocab));
    });
    // a prompt changed, then left: its attention (the status line stays as the last run left it,
    // so that nothing above the Generate button moves while the reader reaches for it)
    prompt.addEventListener("change", function () {
      if (!meta || running) return;
      var text;
      try {
        text = readPrompt();
      } catch (err) {
        clearResults();
        return;
      }
      showAttention(text).catch(function () { clearResults(); });
    });
    greedy.onchange = function () { temperature.disabled = topK.disabled = topP.disabled = greedy.checked; };
    onResize(redraw);
    var figure = el("div", {class: "tl-live-figure"}, [canvas]);
    var attentionBox = el("div", {class: "tl-live-attention"}, [caption, figure]);
    panel.appendChild(el("div", {class: "tl-live-body"}, [
      label("prompt (Enter generates, Shift+Enter starts a new line)", prompt),
      el("div", {class: "tl-live-row"}, [
        label("temperature", temperature), label("top-k", topK), label("top-p", topP),
        label("greedy", greedy), label("characters", count), button,
      ]),
      adapted, output, attentionBox,
    ]));
  }

  function minilmPanel(panel, options) {
    var sentence = el("input", {type: "text", class: "tl-live-text", "aria-label": "sentence",
      enterkeyhint: "go"});
    sentence.value = options.sentence || "The animal didn't cross the street because it was too tired.";
    var button = el("button", {type: "button", class: "tl-live-button", text: "Run MiniLM"});
    var cutNote = el("p", {class: "tl-live-warning", "aria-live": "polite"});
    cutNote.hidden = true;
    var caption = el("p", {class: "tl-live-note", text: "One head's attention: rows are queries, columns keys."});
    var canvas = el("canvas", {class: "tl-live-heatmap"});
    canvas.hidden = true;
    var figure = el("div", {class: "tl-live-figure"}, [canvas]);
    var table = el("div", {class: "tl-live-similar"});
    var compare = options.compare || [];
    var meta = null, controls = null, result = null, fixed = null, timer = null, runs = 0;

    function redraw() {
      if (!result) return;
      var lh = controls.value(), part = firstTokens(result.attention[lh[0]][lh[1]], result.tokens);
      heatmap(canvas, part.pattern, part.tokens, "MiniLM attention, layer " + lh[0] + ", head " + lh[1]);
    }
    function clearResults() {
      result = null;
      clearHeatmap(canvas);
      table.textContent = "";
      cutNote.hidden = true;
      cutNote.textContent = "";
      caption.textContent = "One head's attention: rows are queries, columns keys.";
    }
    function similarities() {
      table.textContent = "";
      table.appendChild(el("p", {class: "tl-live-note",
        text: "Cosine similarity of your sentence's vector with each sentence below:"}));
      compare.forEach(function (text, i) {
        var c = cosine(result.sentence, fixed[i]);
        var bar = el("span", {class: "tl-live-bar"});
        bar.style.width = Math.max(0, c) * 100 + "%";
        table.appendChild(el("div", {class: "tl-live-similarity"}, [
          el("span", {class: "tl-live-cos", text: c.toFixed(2)}),
          el("span", {class: "tl-live-barbox"}, [bar]),
          el("span", {text: text}),
        ]));
      });
    }
    function describe(out) {
      var n = out.tokens.length;
      cutNote.hidden = !out.cut;
      cutNote.textContent = out.cut ? "Your text is " + out.length + " tokens long, [CLS] and [SEP] " +
        "included, and MiniLM reads at most " + meta.max_positions + ": the last " + out.cut +
        (out.cut === 1 ? " token was" : " tokens were") + " cut, so the attention and the " +
        "similarities are of the first " + n + "." : "";
      caption.textContent = n > MAX_DRAWN
        ? "One head's attention over the first " + MAX_DRAWN + " of the " + n + " tokens (rows are " +
          "queries, columns keys); hover a cell for its weight."
        : "One head's attention: rows are queries, columns keys.";
    }
    // the vectors of the sentences to compare with, computed once
    function vectors() {
      if (fixed) return Promise.resolve(fixed);
      setStatus(panel, "Computing the vectors of the " + compare.length + " sentences to compare with...",
        "loading");
      return compare.reduce(function (acc, s) {
        return acc.then(function (list) {
          return minilmRun(s).then(function (out) { return list.concat([out.sentence]); });
        });
      }, Promise.resolve([])).then(function (list) {
        fixed = list;
        return list;
      });
    }
    function run() {
      clearTimeout(timer);
      var mine = ++runs, text = sentence.value;
      if (!text.trim()) {
        clearResults();
        failed(panel, inputError("Type a sentence: the box is empty, and MiniLM has nothing to read."));
        return Promise.resolve();
      }
      if (meta) setStatus(panel, "Running...", "loading");
      return loadShowingProgress(panel, "minilm", "MiniLM").then(function (model) {
        if (!meta) {
          meta = model.meta;
          controls = headControls(meta, redraw, options);
          body.insertBefore(controls.box, caption);
        }
        if (mine !== runs) return null;
        if (!model.tokenizer.tokenize(text).length) {
          throw inputError("MiniLM finds nothing to read in this text: type a sentence.");
        }
        return vectors().then(function () {
          if (mine !== runs) return null;
          var ran = performance.now();
          return minilmRun(text).then(function (out) {
            if (mine !== runs) return;
            result = out;
            describe(out);
            redraw();
            similarities();
            setStatus(panel, "Running in your browser: " + backendText(model) + "; " + out.tokens.length +
              " tokens in " + Math.round(performance.now() - ran) + " ms (first load " +
              Math.round(model.loadMs) + " ms).", "ready");
          });
        });
      }).catch(function (err) {
        if (mine !== runs) return;
        clearResults();
        failed(panel, err, meta !== null);
      });
    }
    button.onclick = run;
    sentence.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(run, 150);
    });
    sentence.addEventListener("keydown", function (event) {
      if (event.key !== "Enter" || event.isComposing) return;
      event.preventDefault();
      run();
    });
    onResize(redraw);
    var body = el("div", {class: "tl-live-body"}, [
      el("div", {class: "tl-live-row"}, [label("sentence", sentence), button]),
      cutNote, caption, figure, table,
    ]);
    panel.appendChild(body);
  }

  function setUp(panel) {
    if (panel.dataset.tlReady) return;
    panel.dataset.tlReady = "1";
    var options = {};
    try { options = JSON.parse(panel.dataset.tlOptions || "{}"); } catch (err) { options = {}; }
    var name = panel.dataset.tlLive;
    panel.textContent = "";
    var bar = el("progress", {class: "tl-live-progress", "aria-label": "loading the model"});
    bar.hidden = true;
    panel.appendChild(el("p", {class: "tl-live-status", role: "status",
      text: "This panel runs the model in your browser when you use it (nothing is sent anywhere)."}));
    panel.appendChild(bar);
    if (!window.WebAssembly) {
      failed(panel, new Error("no WebAssembly"));
      return;
    }
    if (name === "gpt") gptPanel(panel, options);
    else if (name === "minilm") minilmPanel(panel, options);
    else failed(panel, new Error("no live model named " + name));
  }

  function setUpAll() {
    Array.prototype.forEach.call(document.querySelectorAll(".tl-live[data-tl-live]"), setUp);
  }

  window.TransformerLabLive = {
    settings: settings, load: load, gptRun: gptRun, gptGenerate: gptGenerate, minilmRun: minilmRun,
    gptForward: gptForward, idsProblem: idsProblem,
    cleanPrompt: cleanPrompt, nextTokenProbs: nextTokenProbs, cosine: cosine, setUpAll: setUpAll,
    backendText: function (name) { return load(name).then(backendText); },
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUpAll);
  else setUpAll();
})();
