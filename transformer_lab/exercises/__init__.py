"""Exercise checkers: run a reader's function against the package and say what went wrong.

Each ``check_*`` calls the reader's ``fn`` on several seeded inputs (batch dimensions
included, odd lengths, keys and queries of different lengths), compares it with the
package's answer and, when they differ, tries the usual mistakes (forgotten scaling,
softmax over the wrong axis, mask the wrong way round, ...) to say in plain words what went
wrong. It prints the verdict, ``✓ name: message`` or ``✗ name: message``, and returns a
:class:`CheckResult` (truthy when passed, with ``.passed`` and ``.message``). A wrong answer
never raises, so a notebook keeps running, unless ``strict=True``, which raises
``AssertionError`` with the message; ``verbose=False`` prints nothing.

Layout:

- :mod:`.runner`: :class:`CheckResult`, :class:`WrongAnswer`, :func:`run_check` (the verdict
  every checker returns) and the helpers a checker is made of: ``call`` (runs the reader's
  function, reports exceptions and in-place edits), ``need_tensor``, ``compare`` (names the
  first matching mistake), ``close``, ``largest_difference``, ``describe_shapes``.
- :mod:`.attention_mistakes`: random attention inputs and the usual mistakes in attention,
  shared by the attention checkers.
- one module per chapter that has exercises, ``chNN_topic.py`` named after its chapter's
  number (chapter 4's is ``ch04_self_attention``), holding that chapter's checkers; every
  exercise has a checker of its own.
  A checker module imports only :mod:`.runner`, :mod:`.attention_mistakes` and other
  modules' public names; the model modules never import checkers.

Every checker is re-exported here: ``from transformer_lab import exercises`` then
``exercises.check_attention(my_attention)``. The chapter modules are found in this folder
(:data:`CHAPTER_MODULES`, in chapter order) and each ``check_`` name of a module's
``__all__`` is re-exported, so adding or renumbering a chapter's module touches no list
here.
"""

import importlib
import pkgutil
import re

from transformer_lab.exercises.runner import CheckResult, WrongAnswer, run_check

# the checker modules, one per chapter that has exercises (chNN_topic.py), in chapter order
CHAPTER_MODULES = sorted(
    info.name for info in pkgutil.iter_modules(__path__) if re.fullmatch(r"ch\d\d_\w+", info.name)
)

__all__ = ["CheckResult", "WrongAnswer", "run_check"]
for _name in CHAPTER_MODULES:
    _module = importlib.import_module(f"{__name__}.{_name}")
    for _check in _module.__all__:
        if not _check.startswith("check_"):
            continue
        if _check in __all__:
            raise ImportError(f"two checker modules define {_check}: one of them is {_name}")
        globals()[_check] = getattr(_module, _check)
        __all__.append(_check)
del _name, _module, _check
