// Live models on the Transformer Lab site: the chapter-13 character GPT and all-MiniLM-L6-v2
// run in the reader's browser with ONNX Runtime Web, from this site's own _static folder.
//
// Every element <div class="tl-live" data-tl-live="gpt|minilm" data-tl-options="{...}"> on a
// page becomes a panel (transformer_lab.viz.live writes them). The model and ONNX Runtime
// load on first use. The functions the panels use are also the page's API for tests:
// window.TransformerLabLive.{load, gptRun, gptGenerate, minilmRun, nextTokenProbs, ...}.
// See scripts/site/live/README.md for the files and their inputs and outputs.
(function () {
  "use strict";

  var loaded = {}; // url -> Promise of a <script> load
  var models = {}; // name -> Promise of {session, meta, tokenizer, backend, loadMs}
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

  function threads() {
    // WebAssembly threads need SharedArrayBuffer, which browsers give only to
    // cross-origin-isolated pages; elsewhere ONNX Runtime runs on one thread.
    if (!window.crossOriginIsolated) return 1;
    return Math.max(1, Math.min(4, navigator.hardwareConcurrency || 1));
  }

  function loadOrt() {
    if (!ortReady) {
      ortReady = loadScript(staticUrl("ort/ort.min.js")).then(function () {
        var ort = window.ort;
        if (!ort || !ort.InferenceSession) throw new Error("ort.min.js did not define ort");
        ort.env.wasm.wasmPaths = staticUrl("ort/"); // never a CDN
        ort.env.wasm.numThreads = threads();
        ort.env.wasm.proxy = false;
        ort.env.logLevel = "error";
        return ort;
      });
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

  function createSession(ort, url) {
    return webgpuWanted().then(function (gpu) {
      var wasm = function () {
        return ort.InferenceSession.create(url, {executionProviders: ["wasm"]}).then(
          function (session) { return {session: session, backend: "wasm"}; }
        );
      };
      if (!gpu) return wasm();
      return ort.InferenceSession.create(url, {executionProviders: ["webgpu"]}).then(
        function (session) { return {session: session, backend: "webgpu"}; },
        function () { return wasm(); } // an adapter that cannot run the graph: WebAssembly
      );
    });
  }

  function load(name) {
    if (name !== "gpt" && name !== "minilm") {
      return Promise.reject(new Error("no live model named " + JSON.stringify(name)));
    }
    if (!models[name]) {
      var start = performance.now();
      models[name] = Promise.all([
        loadOrt(),
        fetchJson(staticUrl("live/" + name + ".json")),
        loadScript(staticUrl("live/tokenizers.js")),
      ]).then(function (parts) {
        var ort = parts[0], meta = parts[1];
        var T = window.TransformerLabTokenizers;
        if (!T) throw new Error("tokenizers.js did not define TransformerLabTokenizers");
        var tokenizer = name === "gpt" ? new T.CharTokenizer(meta) : new T.WordPieceTokenizer(meta);
        return createSession(ort, staticUrl("live/" + name + ".onnx")).then(function (made) {
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

  function ids64(ids) {
    return new window.ort.Tensor("int64", BigInt64Array.from(ids, function (i) { return BigInt(i); }),
      [1, ids.length]);
  }

  // ---- the GPT -----------------------------------------------------------------------------

  // logits Float32Array [pos * d_vocab], attention Float32Array [n_layers, n_heads, pos, pos]
  function gptForward(model, ids) {
    var n = model.meta.n_ctx;
    if (ids.length < 1 || ids.length > n) {
      return Promise.reject(new Error("the GPT reads 1 to " + n + " characters, got " + ids.length));
    }
    return model.session.run({ids: ids64(ids)}).then(function (out) {
      return {ids: ids, logits: out.logits.data, attention: out.attention.data, pos: ids.length};
    });
  }

  function lastWindow(ids, n) { return ids.slice(Math.max(0, ids.length - n)); }

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

  function minilmRun(text) {
    return load("minilm").then(function (model) {
      var enc = model.tokenizer.encode(text);
      var m = model.meta, n = enc.ids.length;
      if (n > m.max_positions) {
        throw new Error("the sentence has " + n + " tokens; MiniLM reads at most " + m.max_positions);
      }
      return model.session.run({input_ids: ids64(enc.ids)}).then(function (out) {
        return {
          ids: enc.ids, tokens: enc.tokens, backend: model.backend,
          attention: nest(out.attention.data, [m.n_layers, m.n_heads, n, n]),
          sentence: Array.from(out.sentence.data),
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

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else if (k === "class") node.className = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { node.appendChild(c); });
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

  // One head's pattern on a canvas: rows are queries, columns keys, darker is more weight.
  function heatmap(canvas, pattern, tokens, caption) {
    var n = tokens.length, cell = Math.max(7, Math.min(30, Math.floor(520 / n)));
    var labels = tokens.map(shown);
    var ctx = canvas.getContext("2d");
    ctx.font = Math.min(13, cell) + "px sans-serif";
    var margin = Math.min(110, 10 + Math.max.apply(null, labels.map(function (t) {
      return ctx.measureText(t).width;
    })));
    var ratio = window.devicePixelRatio || 1, size = margin + n * cell + 4;
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
    ctx.font = Math.min(13, cell) + "px sans-serif";
    if (cell >= 7) {
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
    }
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

  function setStatus(panel, text, kind) {
    var status = panel.querySelector(".tl-live-status");
    status.textContent = text;
    status.className = "tl-live-status" + (kind ? " tl-live-" + kind : "");
  }

  function failed(panel, err, modelLoaded) {
    var reason = err && err.message ? err.message : String(err);
    if (modelLoaded) { // the model runs here; this input is what it cannot read
      setStatus(panel, "Cannot run the model on this input: " + reason, "error");
      return;
    }
    setStatus(panel, "The live model cannot run in this browser (" + reason + "). The precomputed " +
      "exploration on this page still works without it.", "error");
  }

  function gptPanel(panel, options) {
    var prompt = el("textarea", {rows: 3, class: "tl-live-text", "aria-label": "prompt"});
    prompt.value = options.prompt || "ROMEO:\n";
    var temperature = el("input", {type: "number", min: 0.05, max: 3, step: 0.05, value: 0.8});
    var topK = el("input", {type: "number", min: 0, step: 1, value: 0, title: "0 = off"});
    var topP = el("input", {type: "number", min: 0.05, max: 1, step: 0.05, value: 1, title: "1 = off"});
    var greedy = el("input", {type: "checkbox"});
    var count = el("input", {type: "number", min: 1, max: 2000, step: 1, value: options.n_chars || 200});
    var button = el("button", {type: "button", class: "tl-live-button", text: "Generate"});
    var output = el("pre", {class: "tl-live-output", "aria-live": "polite"});
    var canvas = el("canvas", {class: "tl-live-heatmap"});
    var meta = null, controls = null, attention = null, tokens = null, running = false, stopped = false;

    function redraw() {
      if (!attention) return;
      var lh = controls.value();
      heatmap(canvas, attention[lh[0]][lh[1]], tokens, "GPT attention, layer " + lh[0] + ", head " + lh[1]);
    }
    function showAttention() {
      return gptRun(prompt.value).then(function (out) {
        attention = out.attention;
        tokens = out.tokens;
        redraw();
      });
    }
    function ensure() {
      setStatus(panel, "Loading the GPT and ONNX Runtime Web...", "loading");
      return load("gpt").then(function (model) {
        if (!meta) {
          meta = model.meta;
          controls = headControls(meta, redraw, options);
          attentionBox.insertBefore(controls.box, canvas);
        }
        setStatus(panel, "Running in your browser: " + backendText(model) + "; model loaded in " +
          Math.round(model.loadMs) + " ms.", "ready");
        return model;
      });
    }
    button.onclick = function () {
      if (running) { stopped = true; return; }
      running = true;
      stopped = false;
      button.textContent = "Stop";
      output.textContent = "";
      var start = performance.now(), made = 0;
      ensure().then(function () {
        return showAttention();
      }).then(function () {
        return gptGenerate(prompt.value, Math.max(1, Number(count.value) || 1), {
          greedy: greedy.checked, temperature: Number(temperature.value),
          topK: Number(topK.value) || null, topP: Number(topP.value) < 1 ? Number(topP.value) : null,
          shouldStop: function () { return stopped; },
        }, function (text) { output.textContent += text; made += 1; });
      }).then(function () {
        var seconds = (performance.now() - start) / 1000;
        setStatus(panel, panel.querySelector(".tl-live-status").textContent.split(";")[0] + "; " +
          made + " characters in " + seconds.toFixed(1) + " s.", "ready");
      }).catch(function (err) { failed(panel, err, meta !== null); }).then(function () {
        running = false;
        button.textContent = "Generate";
      });
    };
    prompt.addEventListener("change", function () {
      if (meta) showAttention().catch(function (err) { failed(panel, err, true); });
    });
    greedy.onchange = function () { temperature.disabled = topK.disabled = topP.disabled = greedy.checked; };
    var attentionBox = el("div", {class: "tl-live-attention"}, [
      el("p", {class: "tl-live-note", text: "Attention over the prompt (its last n_ctx characters): " +
        "rows are queries, columns keys."}),
      canvas,
    ]);
    panel.appendChild(el("div", {class: "tl-live-body"}, [
      label("prompt", prompt),
      el("div", {class: "tl-live-row"}, [
        label("temperature", temperature), label("top-k", topK), label("top-p", topP),
        label("greedy", greedy), label("characters", count), button,
      ]),
      output, attentionBox,
    ]));
  }

  function minilmPanel(panel, options) {
    var sentence = el("input", {type: "text", class: "tl-live-text", "aria-label": "sentence"});
    sentence.value = options.sentence || "The animal didn't cross the street because it was too tired.";
    var button = el("button", {type: "button", class: "tl-live-button", text: "Run MiniLM"});
    var canvas = el("canvas", {class: "tl-live-heatmap"});
    var table = el("div", {class: "tl-live-similar"});
    var compare = options.compare || [];
    var meta = null, controls = null, result = null, fixed = null, pending = null, timer = null;

    function redraw() {
      if (!result) return;
      var lh = controls.value();
      heatmap(canvas, result.attention[lh[0]][lh[1]], result.tokens,
        "MiniLM attention, layer " + lh[0] + ", head " + lh[1]);
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
    function run() {
      var text = sentence.value;
      setStatus(panel, meta ? "Running..." : "Loading MiniLM and ONNX Runtime Web...", "loading");
      var start = performance.now();
      pending = load("minilm").then(function (model) {
        if (!meta) {
          meta = model.meta;
          controls = headControls(meta, redraw, options);
          body.insertBefore(controls.box, canvas);
        }
        var first = fixed ? Promise.resolve(fixed) : compare.reduce(function (acc, s) {
          return acc.then(function (list) {
            return minilmRun(s).then(function (out) { return list.concat([out.sentence]); });
          });
        }, Promise.resolve([]));
        return first.then(function (vectors) {
          fixed = vectors;
          var ran = performance.now();
          return minilmRun(text).then(function (out) {
            result = out;
            redraw();
            similarities();
            setStatus(panel, "Running in your browser: " + backendText(model) + "; " + out.tokens.length +
              " tokens in " + Math.round(performance.now() - ran) + " ms (first load " +
              Math.round(model.loadMs) + " ms).", "ready");
            return start;
          });
        });
      }).catch(function (err) { failed(panel, err, meta !== null); });
      return pending;
    }
    button.onclick = run;
    sentence.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(run, 150);
    });
    var body = el("div", {class: "tl-live-body"}, [
      el("div", {class: "tl-live-row"}, [label("sentence", sentence), button]),
      el("p", {class: "tl-live-note", text: "One head's attention: rows are queries, columns keys."}),
      canvas, table,
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
    panel.appendChild(el("p", {class: "tl-live-status",
      text: "This panel runs the model in your browser when you use it (nothing is sent anywhere)."}));
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
    nextTokenProbs: nextTokenProbs, cosine: cosine, setUpAll: setUpAll,
    backendText: function (name) { return load(name).then(backendText); },
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUpAll);
  else setUpAll();
})();
