"""The verdict runner and the helpers every checker shares; the layout of the package
(one module per chapter, no private imports across modules, no checker in a model module)."""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import pytest
import torch
from checker_helpers import assert_fails, verdict
from script_loader import load_script

from transformer_lab import exercises as ex
from transformer_lab.exercises import runner
from transformer_lab.exercises.runner import WrongAnswer

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "transformer_lab"
EXERCISES = PACKAGE / "exercises"
# the checker modules as the package finds them (chNN_topic.py); the chapter of each is
# checked against the book's chapter list below
CHAPTER_MODULES = sorted(p.stem for p in EXERCISES.glob("ch[0-9][0-9]_*.py"))
CHECK_CALL = re.compile(r"\bcheck_[a-z0-9_]+")


def attention(q, k, v):
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v


def wrong_answer(body) -> str:
    with pytest.raises(WrongAnswer) as info:
        body()
    return str(info.value)


# --- The result object and the strict / verbose switches --------------------------------


def test_result_prints_and_is_truthy(capsys):
    result = ex.check_attention(attention)
    assert result.passed and bool(result)
    assert "✓ check_attention" in capsys.readouterr().out


def test_wrong_answer_never_raises_unless_strict(capsys):
    def buggy(q, k, v):
        return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v

    result = ex.check_attention(buggy)
    assert not result and "✗ check_attention" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="sqrt"):
        ex.check_attention(buggy, strict=True, verbose=False)
    assert ex.check_attention(attention, strict=True, verbose=False)


def test_run_check_prints_only_when_verbose(capsys):
    def body():
        raise WrongAnswer("no")

    result = runner.run_check("mine", body, strict=False, verbose=False)
    assert not result and result.message == "no" and capsys.readouterr().out == ""
    assert str(runner.run_check("mine", lambda: "yes", False, True)) == "✓ mine: yes"
    assert capsys.readouterr().out == "✓ mine: yes\n"


# --- call ----------------------------------------------------------------------------------


def test_call_reports_exceptions_stubs_and_in_place_edits():
    x = torch.ones(3)
    assert runner.call(lambda a, n: a * n, (x, 2), "x").tolist() == [2.0, 2.0, 2.0]

    def broken(a):
        raise ValueError("bad shape")

    message = wrong_answer(lambda: runner.call(broken, (x,), "x of shape (3,)"))
    assert "raised ValueError: bad shape (inputs: x of shape (3,))" in message
    assert "batch dimensions" not in message
    hinted = wrong_answer(lambda: runner.call(broken, (x,), "x", batch_hint=True))
    assert "k.transpose(-2, -1)" in hinted

    def stub(a):
        raise NotImplementedError

    assert "not written yet" in wrong_answer(lambda: runner.call(stub, (x,), "x"))

    def in_place(a, b, c, d, e):
        e.add_(1)
        return e

    args = (x, x, x, x, x.clone())
    assert "changed its 5th argument in place" in wrong_answer(
        lambda: runner.call(in_place, args, "x")
    )
    assert torch.equal(args[4], torch.ones(3))  # the checker's own input is untouched


def test_in_place_change_of_an_input_is_reported_by_a_checker():
    def in_place(q, k, v):
        q.mul_(1 / math.sqrt(q.shape[-1]))
        return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v

    assert_fails(verdict(ex.check_attention, in_place), "in place")


def test_exception_in_reader_code_is_reported_not_raised():
    def broken(q, k, v):
        raise ValueError("not written yet")

    assert_fails(verdict(ex.check_attention, broken), "raised ValueError", "not written yet")

    def stub(q, k, v):
        raise NotImplementedError

    assert_fails(verdict(ex.check_attention, stub), "your function is not written yet")


# --- need_tensor, close, largest_difference, compare -------------------------------------


def test_need_tensor():
    t = torch.zeros(2)
    assert runner.need_tensor(t) is t
    assert "returned list, expected a tensor" in wrong_answer(lambda: runner.need_tensor([0]))
    message = wrong_answer(lambda: runner.need_tensor((t, t), "the output", " (a note)"))
    assert message.endswith("tuple of 2 items; it should return only the output (a note).")


def test_close_and_largest_difference():
    want = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert runner.close(want + 1e-6, want)
    assert not runner.close(want + 1e-2, want)
    assert not runner.close(want.T.contiguous().view(4), want)
    assert runner.close(torch.tensor([math.nan]), torch.tensor([math.nan]), equal_nan=True)
    got = want.clone()
    got[1, 0] = 3.5
    assert runner.largest_difference(got, want) == (
        "largest difference 0.5 at index (1, 0) (got 3.5, expected 3)"
    )


def test_compare_names_mistakes_even_when_the_shape_is_wrong():
    want = torch.arange(6.0).view(2, 3)
    mistakes = [("transposed", want.T), ("doubled", 2 * want)]
    runner.compare(want.clone(), want, "w", mistakes)  # a right answer passes
    assert wrong_answer(lambda: runner.compare(want.T, want, "w", mistakes)) == "transposed (w)."
    assert wrong_answer(lambda: runner.compare(2 * want, want, "w", mistakes)) == "doubled (w)."
    lazy = wrong_answer(lambda: runner.compare(2 * want, want, "w", lambda: mistakes))
    assert lazy == "doubled (w)."
    shape = wrong_answer(lambda: runner.compare(want[0], want, "w", mistakes))
    assert "wrong output shape: expected (2, 3), got (3,)" in shape


def test_compare_hints():
    want = torch.full((2, 3), 1 / 3)
    assert "dtype torch.int64" in wrong_answer(lambda: runner.compare(want.long(), want, "w"))
    assert "all zeros" in wrong_answer(lambda: runner.compare(torch.zeros(2, 3), want, "w"))
    assert "NaN" in wrong_answer(lambda: runner.compare(want * math.nan, want, "w"))
    message = wrong_answer(lambda: runner.compare(2 * want, want, "w", row_sums=True))
    assert "largest difference" in message and "Rows should sum to one" in message
    assert "Rows" not in wrong_answer(lambda: runner.compare(2 * want, want, "w"))


def test_describe_shapes():
    assert runner.describe_shapes(a=torch.zeros(2, 3), b=torch.zeros(4)) == (
        "a of shape (2, 3), b of shape (4,)"
    )


# --- The layout of the package -------------------------------------------------------------


def test_one_module_per_chapter_and_every_checker_re_exported():
    import importlib

    names = {p.stem for p in EXERCISES.glob("*.py")}
    assert CHAPTER_MODULES and ex.CHAPTER_MODULES == CHAPTER_MODULES
    assert names - set(CHAPTER_MODULES) == {"__init__", "runner", "attention_mistakes"}
    for name in CHAPTER_MODULES:
        module = importlib.import_module(f"transformer_lab.exercises.{name}")
        assert module.__doc__, f"{name} has no docstring"
        for public in module.__all__:
            assert hasattr(module, public), f"{name}.__all__ names a missing {public}"
            if public.startswith("check_"):
                assert public in ex.__all__, f"{name}.{public} is not re-exported"
                assert getattr(ex, public) is getattr(module, public)
    assert {"CheckResult", "WrongAnswer", "run_check"} <= set(ex.__all__)
    assert all(hasattr(ex, name) for name in ex.__all__)


def test_each_checker_module_is_its_chapters():
    """chNN_topic.py holds the checkers of chapter NN: the chapter exists (in the book's one
    list, scripts/site/chapters.py), the module's docstring names it, and every checker a
    chapter calls lives in the module of its number, so a renumbered chapter whose module
    kept its old number fails here."""
    import importlib

    by_number = load_script("site/chapters").by_number()
    home = {}
    for name in CHAPTER_MODULES:
        n = int(name[2:4])
        assert n in by_number, f"{name}.py names chapter {n}, which the book does not have"
        module = importlib.import_module(f"transformer_lab.exercises.{name}")
        assert module.__doc__.startswith(f"Checkers for chapter {n},"), name
        home |= {check: n for check in module.__all__ if check.startswith("check_")}
    for n, stem in by_number.items():
        calls = set(CHECK_CALL.findall((ROOT / "book" / f"{stem}.md").read_text()))
        elsewhere = {c: home[c] for c in calls if c in home and home[c] != n}
        assert not elsewhere, f"{stem} calls checkers of other chapters' modules: {elsewhere}"


def _imports(path: Path):
    """(module, names) for each import in ``path``, relative imports resolved."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            yield base, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []


def test_checker_modules_import_no_private_names_from_each_other():
    for path in sorted(EXERCISES.glob("*.py")):
        for module, names in _imports(path):
            if module.startswith("transformer_lab.exercises"):
                private = [n for n in names if n.startswith("_")]
                assert not private, f"{path.name} imports {private} from {module}"


def test_no_module_outside_exercises_imports_a_checker():
    outside = [p for p in PACKAGE.rglob("*.py") if EXERCISES not in p.parents]
    assert any(p.parent.name == "models" for p in outside)
    for path in outside:
        for module, names in _imports(path):
            imported = [module] + [f"{module}.{n}" for n in names]
            assert not any(m.startswith("transformer_lab.exercises") for m in imported), (
                f"{path.relative_to(ROOT)} imports from transformer_lab.exercises"
            )


def test_the_layout_tests_see_relative_imports():
    imports = dict(_imports(EXERCISES / "ch04_self_attention.py"))
    assert "transformer_lab.exercises.runner" in imports
    assert "transformer_lab.exercises.attention_mistakes" in imports
    assert ("transformer_lab", ["exercises"]) in list(_imports(Path(__file__).resolve()))
