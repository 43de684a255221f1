"""The shape of the package at a commit: its modules and their lengths, its longest functions,
the share of argument-check lines in its code, the check lines among the lines the
book's listings (``viz.source``) show, the private names one module imports from another,
the import circles, the parameters of the training loop and its recipes, and where the
tokenizers live: the modules that define a tokenizer or vocabulary class, and the tuples of
special tokens.

    python scripts/bench/package_report.py [REF ...]   # default: the working tree

A REF is checked out into a temporary git worktree; the chapters and the package are read
from the same commit. Guard lines are the lines of an ``if`` whose body only raises, plus
one-line calls to a check (a function named ``check_*`` or one from ``transformer_lab.checks``).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the integer and number checks of checks.py, past and present: an old commit and a new one
# count the same lines as guards
INT_CHECKS = ("integer", "positive_int", "non_negative_int", "int_at_least")
NUMBER_CHECKS = ("finite_number", "positive_number", "non_negative_number", "positive")
CHECK_NAMES = {"is_int", "fraction", "one_of", "floating_tensor", *INT_CHECKS, *NUMBER_CHECKS}


def _is_check_call(node) -> bool:
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return False
    f = node.value.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    return name.startswith("check_") or name.startswith("_check") or name in CHECK_NAMES


def _assign_check(node) -> bool:
    """``x = positive_int(x, "x")``: a check that returns its value."""
    if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
        return False
    f = node.value.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    return name in CHECK_NAMES


def guard_lines(tree) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if (
            (
                isinstance(node, ast.If)
                and not node.orelse
                and all(isinstance(b, ast.Raise) for b in node.body)
            )
            or _is_check_call(node)
            or _assign_check(node)
        ):
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def code_lines(text: str, tree) -> set[int]:
    """Lines holding code: not blank, not a comment, not inside a docstring."""
    doc: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            first = body[0] if body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                doc.update(range(first.lineno, first.end_lineno + 1))
    out = set()
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s and not s.startswith("#") and i not in doc:
            out.add(i)
    return out


def package_stats(tree_root: Path) -> dict:
    pkg = tree_root / "transformer_lab"
    modules, functions = {}, []
    n_code = n_guard = 0
    for p in sorted(pkg.rglob("*.py")):
        rel = p.relative_to(tree_root).as_posix()
        if "/exercises/" in rel:
            continue
        text = p.read_text()
        tree = ast.parse(text)
        modules[rel] = len(text.splitlines())
        code = code_lines(text, tree)
        n_code += len(code)
        n_guard += len(code & guard_lines(tree))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.append((node.end_lineno - node.lineno + 1, f"{rel}:{node.name}"))
    functions.sort(reverse=True)
    lengths = sorted(n for n, _ in functions)
    return {
        "modules": modules,
        "n_modules": len(modules),
        "top_level_modules": sorted(p.name for p in pkg.glob("*.py") if p.name != "__init__.py"),
        "longest_functions": functions[:10],
        "median_function": lengths[len(lengths) // 2],
        "code_lines": n_code,
        "guard_lines": n_guard,
    }


SOURCE_CALL = re.compile(r"viz\.source\((?P<args>[^()]*(?:\([^()]*\)[^()]*)*)\)")


def listing_calls(tree_root: Path) -> list[tuple[str, dict]]:
    calls = []
    for md in sorted((tree_root / "book").glob("[0-9][0-9]_*.md")):
        for m in SOURCE_CALL.finditer(md.read_text()):
            node = ast.parse(f"f({m.group('args')})", mode="eval").body
            if not node.args or not isinstance(node.args[0], ast.Constant):
                continue
            kw = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
            calls.append((node.args[0].value, kw))
    return calls


RESOLVE = r"""
import inspect, json, sys, textwrap, importlib
out = []
for name, kw in json.loads(sys.argv[1]):
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        break
    obj = inspect.unwrap(obj)
    lines, start = inspect.getsourcelines(obj)
    start = max(start, 1)
    code = textwrap.dedent("".join(lines)).rstrip("\n").split("\n")
    first, last = 0, len(code)
    if kw.get("start_at"):
        first = [i for i, l in enumerate(code) if kw["start_at"] in l][0]
    if kw.get("end_at"):
        last = [i for i, l in enumerate(code) if kw["end_at"] in l and i >= first][0] + 1
    if kw.get("end_before"):
        last = [i for i, l in enumerate(code) if kw["end_before"] in l and i > first][0]
    from transformer_lab import viz
    from transformer_lab.viz.listing import check_lines
    shown = viz.source(name, **kw).code
    folded = [start + i for a, b in check_lines("\n".join(code)) for i in range(a, b + 1)]
    out.append([inspect.getsourcefile(obj), start + first, start + last - 1, shown, folded])
print(json.dumps(out))
"""


def listing_stats(tree_root: Path) -> dict:
    calls = listing_calls(tree_root)
    env = {"PYTHONPATH": str(tree_root), "PATH": "/usr/bin:/bin"}
    run = subprocess.run(
        [sys.executable, "-c", RESOLVE, json.dumps(calls)],
        cwd=tree_root,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    in_file = guards = shown = shown_guards = 0
    per = []
    resolved = json.loads(run.stdout)
    for (name, _), (file, first, last, code, folded) in zip(calls, resolved, strict=True):
        text = Path(file).read_text()
        tree = ast.parse(text)
        rng = set(range(first, last + 1))
        g = rng & guard_lines(tree)
        left = len(g - set(folded))  # check lines the chapter still shows
        in_file += len(rng)
        guards += len(g)
        shown += len(code.splitlines())
        shown_guards += left
        per.append((name, len(rng), len(g), len(code.splitlines()), left))
    return {
        "listings": len(calls),
        "listing_lines": in_file,
        "listing_guard_lines": guards,
        "shown_lines": shown,
        "shown_guard_lines": shown_guards,
        "per_listing": per,
    }


def _module_name(pkg_root: Path, path: Path) -> str:
    parts = list(path.relative_to(pkg_root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def seam_stats(tree_root: Path) -> dict:
    """Private names (one leading underscore) that a package module imports from another,
    and the circles in the graph of imports between package modules."""
    pkg = tree_root / "transformer_lab"
    files = {_module_name(pkg, p): p for p in pkg.rglob("*.py")}
    private, edges = [], {name: set() for name in files}
    for name, path in files.items():
        here = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")[: len(here.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                for alias in node.names:
                    target = f"{source}.{alias.name}"
                    target = target if target in files else source
                    if target in files and target != name:
                        edges[name].add(target)
                    private_name = alias.name.startswith("_") and not alias.name.startswith("__")
                    if source.startswith("transformer_lab") and private_name:
                        private.append(f"{name} <- {source}.{alias.name}")
            elif isinstance(node, ast.Import):
                edges[name].update(a.name for a in node.names if a.name in files and a.name != name)
    return {"private_imports": private, "import_circles": circles(edges)}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted;
    ``tests/test_package_layout.py`` holds the package to none."""
    index, low, stack, on, out, count = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = count[0]
        count[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


TRAINING_CALLS = {  # module file -> functions whose parameters the report counts
    "training/loop.py": ["train"],
    "training/gpt.py": ["train_gpt"],
    "training/finetune.py": ["train_classifier"],
    "training/lora.py": ["train_lora"],
    "training/toy.py": ["train_toy"],
    "training/recall.py": ["train_recall"],
    "training/word_bert.py": ["pretrain_word_bert"],  # before the two BERT recipes shared a module
    "training/tiny_bert.py": ["pretrain_tiny_bert"],
    "training/bert_pretraining.py": ["pretrain_word_bert", "pretrain_tiny_bert"],
}


def training_stats(tree_root: Path) -> dict:
    """The number of parameters of the training loop and of each recipe function."""
    out = {}
    for rel, names in TRAINING_CALLS.items():
        path = tree_root / "transformer_lab" / rel
        if not path.exists():
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name in names:
                a = node.args
                params = a.posonlyargs + a.args + a.kwonlyargs
                out[node.name] = len(params) + bool(a.vararg) + bool(a.kwarg)
    return {"training_parameters": out}


TOKENIZER_CLASS = re.compile(r"(Tokenizer|Vocab|Vocabulary)$")
SPECIAL_TOKEN = re.compile(r"<[a-z]+>|\[[A-Z]+\]")  # "<pad>", "[CLS]"


def _special_token_tuple(value) -> bool:
    """A tuple literal, or a call (a named tuple), of two or more special-token strings."""
    items = value.elts if isinstance(value, ast.Tuple) else getattr(value, "args", None)
    if not isinstance(value, (ast.Tuple, ast.Call)) or not items or len(items) < 2:
        return False
    return all(
        isinstance(e, ast.Constant)
        and isinstance(e.value, str)
        and SPECIAL_TOKEN.fullmatch(e.value)
        for e in items
    )


def tokenizer_stats(tree_root: Path) -> dict:
    """The modules that define a tokenizer or vocabulary class (a class whose name ends in
    ``Tokenizer``, ``Vocab`` or ``Vocabulary``), with those classes, and the module-level
    tuples of special tokens (two or more strings such as ``"<pad>"`` or ``"[CLS]"``)."""
    pkg = tree_root / "transformer_lab"
    homes, tuples = {}, []
    for p in sorted(pkg.rglob("*.py")):
        rel = p.relative_to(pkg).as_posix()
        if rel.startswith("exercises/"):
            continue
        body = ast.parse(p.read_text()).body
        names = [n.name for n in body if isinstance(n, ast.ClassDef)]
        if classes := [n for n in names if TOKENIZER_CLASS.search(n)]:
            homes[rel] = classes
        for node in body:
            if isinstance(node, ast.Assign) and _special_token_tuple(node.value):
                tuples += [f"{rel}:{t.id}" for t in node.targets if isinstance(t, ast.Name)]
    return {"tokenizer_homes": homes, "special_token_tuples": tuples}


def check_stats(tree_root: Path) -> dict:
    """The functions of ``checks.py``, its spellings of "an int at least n" and of "a number
    above or at least x", and the public functions and methods with a private twin (``f`` and
    ``_f`` in one module or class)."""
    pkg = tree_root / "transformer_lab"
    tree = ast.parse((pkg / "checks.py").read_text())
    defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    twins = []
    for p in sorted(pkg.rglob("*.py")):
        module = ast.parse(p.read_text())
        rel = p.relative_to(tree_root).as_posix()
        for scope in [module] + [n for n in ast.walk(module) if isinstance(n, ast.ClassDef)]:
            names = {n.name for n in scope.body if isinstance(n, ast.FunctionDef)}
            where = f"{rel}:{scope.name}." if isinstance(scope, ast.ClassDef) else f"{rel}:"
            twins += [where + n for n in sorted(names) if n[0] != "_" and f"_{n}" in names]
    return {
        "check_functions": [n for n in defined if not n.startswith("_")],
        "int_spellings": [n for n in INT_CHECKS if n in defined],
        "number_spellings": [n for n in NUMBER_CHECKS if n in defined],
        "private_twins": twins,
    }


def report(tree_root: Path) -> dict:
    return {
        **package_stats(tree_root),
        **check_stats(tree_root),
        **listing_stats(tree_root),
        **seam_stats(tree_root),
        **training_stats(tree_root),
        **tokenizer_stats(tree_root),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("refs", nargs="*", help="git commits (default: the working tree)")
    parser.add_argument("--json", action="store_true", help="print the full report as JSON")
    args = parser.parse_args()
    results = {}
    for ref in args.refs or [None]:
        if ref is None:
            results["working tree"] = report(ROOT)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(
                ["git", "worktree", "add", "-q", "--detach", tmp, ref], cwd=ROOT, check=True
            )
            try:
                results[ref] = report(Path(tmp))
            finally:
                subprocess.run(["git", "worktree", "remove", "--force", tmp], cwd=ROOT, check=True)
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for ref, r in results.items():
        print(f"== {ref}")
        print(f"modules: {r['n_modules']} (top level: {len(r['top_level_modules'])})")
        big = sorted(r["modules"].items(), key=lambda kv: -kv[1])[:8]
        print("longest modules:", ", ".join(f"{k} {v}" for k, v in big))
        print(
            "longest functions:", ", ".join(f"{name} {n}" for n, name in r["longest_functions"][:6])
        )
        print(f"median function: {r['median_function']} lines")
        share = r["guard_lines"] / r["code_lines"]
        print(f"guard lines in code: {r['guard_lines']} of {r['code_lines']} ({share:.1%})")
        print(
            f"listings: {r['listings']}, lines listed from the files {r['listing_lines']}, "
            f"guard lines among them {r['listing_guard_lines']}"
        )
        if "shown_lines" in r:
            share = r["shown_guard_lines"] / r["shown_lines"]
            print(
                f"as the chapters show them (checks folded): {r['shown_lines']} lines, "
                f"guard lines among them {r['shown_guard_lines']} ({share:.1%})"
            )
        print(
            f"checks.py: {len(r['check_functions'])} public functions; "
            f"an int at least n: {', '.join(r['int_spellings'])}; "
            f"a number above or at least x: {', '.join(r['number_spellings'])}"
        )
        twins = r["private_twins"]
        print(f"public functions with a private twin: {len(twins)} ({', '.join(twins)})")
        private = r["private_imports"]
        sources = {p.split(" <- ")[0] + p.split(" <- ")[1].rsplit(".", 1)[0] for p in private}
        print(f"private names imported across modules: {len(private)} in {len(sources)} imports")
        print(f"import circles: {r['import_circles'] or 'none'}")
        params = ", ".join(f"{k} {v}" for k, v in r["training_parameters"].items())
        print(f"parameters of the training calls: {params}")
        homes = r["tokenizer_homes"]
        stages = sorted({m.split("/")[0] for m in homes})
        print(
            f"tokenizer homes: {len(homes)} modules in {len(stages)} stages ({', '.join(stages)}): "
            + "; ".join(f"{m} {', '.join(c)}" for m, c in homes.items())
        )
        specials = r["special_token_tuples"]
        print(f"special-token tuples: {len(specials)} ({', '.join(specials)})")


if __name__ == "__main__":
    main()
