"""The live panels' script (``scripts/site/live/live.js``) refuses token ids outside the
model's vocabulary before a session runs: ONNX's ``Gather`` reads -1 as the last row of the
embedding table, so the exported GPT would answer for it (``test_onnx.py`` shows that it
does). The script runs under Node with a stand-in for the page and for ONNX Runtime, so
neither a built site nor a browser is needed; the panels show the error's message after
"Cannot run the model on this input: " (``failed`` in ``live.js``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

LIVE_JS = Path(__file__).resolve().parents[2] / "scripts" / "site" / "live" / "live.js"
NODE = shutil.which("node")

# live.js in a context with a page of no panels and an ONNX Runtime whose Tensor keeps what
# it is given; a fake session records its runs. Prints one JSON line of what happened.
HARNESS = r"""
const vm = require("vm"), fs = require("fs");
const window = {crossOriginIsolated: false, ort: {Tensor: function (type, data, dims) {
  this.type = type; this.data = data; this.dims = dims;
}}};
const document = {readyState: "complete", querySelectorAll: () => [],
  documentElement: {dataset: {}}, baseURI: "http://localhost/"};
window.document = document;
vm.runInNewContext(fs.readFileSync(process.argv[1], "utf8"),
  {window, document, navigator: {}, performance, setTimeout, console, BigInt, BigInt64Array});
const L = window.TransformerLabLive;
const runs = [];
function gpt(vocab) {
  const d = vocab.length;
  return {name: "gpt", meta: {n_ctx: 4, vocab: vocab, n_layers: 1, n_heads: 1},
    session: {run: (feeds) => {
      const pos = feeds.ids.dims[1];
      const ids = Array.from(feeds.ids.data, Number);
      runs.push({type: feeds.ids.type, dims: feeds.ids.dims, ids: ids});
      return Promise.resolve({logits: {data: new Float32Array(pos * d)},
        attention: {data: new Float32Array(pos * pos)}});
    }}};
}
async function attempt(ids) {
  try { await L.gptForward(gpt(["a", "b", "c"]), ids); return null; }
  catch (err) { return err.message; }
}
(async () => {
  const cases = JSON.parse(process.argv[2]), refused = [];
  for (const ids of cases) refused.push(await attempt(ids));
  const minilm = {name: "minilm", meta: {vocab: ["[PAD]", "[CLS]", "[SEP]", "x"]}};
  const problems = [[0, 1, 2, 3], [1, 4, 2], [1, -1, 2], [1, 1.5, 2]]
    .map((ids) => L.idsProblem(minilm, ids));
  console.log(JSON.stringify({refused, runs, problems}));
})();
"""


@pytest.fixture(scope="module")
def outcome():
    if NODE is None:
        pytest.skip("the test of live.js runs it under Node: apt-get install nodejs")
    cases = [[-1], [0, 3], [0, 1.5], [2, -3, 1], [0, 2, 1]]
    done = subprocess.run(
        [NODE, "-e", HARNESS, str(LIVE_JS), json.dumps(cases)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_gpt_is_never_run_on_an_id_outside_its_vocabulary(outcome):
    assert outcome["refused"][:4] == [
        "the GPT reads token ids 0 to 2 (its 3 tokens), got -1 at position 0",
        "the GPT reads token ids 0 to 2 (its 3 tokens), got 3 at position 1",
        "the GPT reads token ids 0 to 2 (its 3 tokens), got 1.5 at position 1",
        "the GPT reads token ids 0 to 2 (its 3 tokens), got -3 at position 1",
    ]
    # the ids of its vocabulary run, once, as one int64 sequence
    assert outcome["refused"][4] is None
    assert outcome["runs"] == [{"type": "int64", "dims": [1, 3], "ids": [0, 2, 1]}]


def test_minilms_ids_are_checked_the_same_way(outcome):
    assert outcome["problems"] == [
        None,
        "MiniLM reads token ids 0 to 3 (its 4 tokens), got 4 at position 1",
        "MiniLM reads token ids 0 to 3 (its 4 tokens), got -1 at position 1",
        "MiniLM reads token ids 0 to 3 (its 4 tokens), got 1.5 at position 1",
    ]
