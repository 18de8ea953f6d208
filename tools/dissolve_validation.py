"""Dissolve ``cogtestbed/validation/`` into the top-level workflow packages and give planning a folder per kind.

    python tools/dissolve_validation.py            # move the files (git mv), rewrite every reference, print the table
    python tools/dissolve_validation.py --dry-run  # print the table and the files it would rewrite, change nothing

Where each module goes (:func:`target_of`, the rules in order):

* ``validation/errors.py`` -> ``cogtestbed/study_errors.py`` (light errors of studies and checks, base layer);
* ``validation/runs/*`` -> ``cogtestbed/runs/``, ``validation/studies/*`` -> ``cogtestbed/studies/``,
  ``validation/conformance/*`` -> ``cogtestbed/conformance/``;
* ``validation/design/*`` -> ``cogtestbed/planning/``, except the modules of one plan kind, which go to
  ``cogtestbed/planning/kinds/<kind>/`` by name (:data:`KIND_RULES`: ``seq*`` and ``runlooks`` -> sequential,
  ``monitor_*`` and ``eprocess`` -> monitor, ``mix*`` -> mix, ``form*`` -> forms, ...; ``kinds.py``, the kind
  contract, becomes ``planning/kinds/__init__.py``);
* any other file under ``validation/`` (one a later merge adds in a new sub-folder) is reported, not moved.

Every reference is then rewritten through the same table: dotted module names (imports, ``"module:attr"`` strings,
dispatch tables, ``mock.patch`` targets), ``from package import module`` lines (split when the modules now live in
different packages), file paths (``cogtestbed/validation/design/x.py`` and the short ``validation/design/x.py``), the
package-data table of ``pyproject.toml``, and the layer order of ``tests/test_import_graph.py``.  History is left as
written: ``CHANGELOG.md``, ``benchmarks/records/`` and ``locks/``.  The script is idempotent: once nothing is left
under ``validation/`` and no reference names it, a second run changes nothing; run it again after a merge that adds
files or references under the old names.  Touched Python files get ``ruff check --select I --fix`` (import order).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OLD = "cogtestbed/validation"

#: (kind folder, rule on the module's stem) for ``validation/design`` modules that belong to one plan kind.
KIND_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("sequential", re.compile(r"^(seq\w*|sequential|runlooks)$")),
    ("monitor", re.compile(r"^(monitor\w*|eprocess)$")),
    ("mix", re.compile(r"^mix\w*$")),
    ("forms", re.compile(r"^(form_\w*|forms\w*)$")),
    ("adaptive", re.compile(r"^adaptive\w*$")),
    ("precision", re.compile(r"^precision\w*$")),
    ("power", re.compile(r"^(power\w*|sizetest)$")),
    ("people", re.compile(r"^people\w*$")),
    ("hierarchical", re.compile(r"^hierarchical\w*$")),
)
PACKAGES = {"runs": "cogtestbed/runs", "studies": "cogtestbed/studies", "conformance": "cogtestbed/conformance",
            "design": "cogtestbed/planning"}
SKIP_DIRS = {".git", ".venv", "node_modules", "site", "__pycache__", ".mypy_cache", ".ruff_cache", "locks"}
SKIP_PATHS = ("CHANGELOG.md", "benchmarks/records/", "tools/dissolve_validation.py", "tests/test_house_tools.py")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yml", ".yaml", ".cfg", ".ini", ".txt", ".json", ".ipynb", ".rst", ""}


def target_of(rel: str) -> str | None:
    """The new repository path of ``rel`` (a path under ``cogtestbed/validation/``), or None: no rule places it."""
    parts = rel[len(OLD) + 1:].split("/")
    if parts == ["errors.py"]:
        return "cogtestbed/study_errors.py"
    if parts == ["__init__.py"]:
        return ""  # the package itself goes away
    if len(parts) < 2 or parts[0] not in PACKAGES:
        return None
    base = PACKAGES[parts[0]]
    if parts[0] == "design" and len(parts) == 2 and parts[1].endswith(".py"):
        stem = parts[1][:-3]
        if stem == "kinds":  # the kind contract is the kinds package itself
            return f"{base}/kinds/__init__.py"
        for kind, rule in KIND_RULES:
            if rule.match(stem):
                return f"{base}/kinds/{kind}/{parts[1]}"
    return "/".join([base, *parts[1:]])


def _module(path: str) -> str:
    dotted = path[:-3].replace("/", ".") if path.endswith(".py") else path.replace("/", ".")
    return dotted[: -len(".__init__")] if dotted.endswith(".__init__") else dotted


def plan_moves(files: list[str]) -> tuple[dict[str, str], list[str]]:
    """(old path -> new path, paths no rule places) for the files under ``validation/``."""
    moves, unplaced = {}, []
    for rel in files:
        new = target_of(rel)
        if new is None:
            unplaced.append(rel)
        else:
            moves[rel] = new
    return moves, unplaced


def module_table(moves: dict[str, str]) -> dict[str, str]:
    """Old dotted module -> new dotted module (packages included), longest first."""
    table: dict[str, str] = {f"cogtestbed.validation.{old}": new.replace("/", ".")
                             for old, new in PACKAGES.items()}
    for old, new in moves.items():
        if old.endswith(".py") and new:
            table[_module(old)] = _module(new)
    table.pop("cogtestbed.validation", None)
    return dict(sorted(table.items(), key=lambda kv: -len(kv[0])))


def _known_modules(moves: dict[str, str]) -> dict[str, str]:
    """Every old module of the table including those already moved (a second run after a merge)."""
    return module_table(moves)


_FROM = re.compile(r"^(?P<indent>[ \t]*)from (?P<pkg>cogtestbed\.validation(?:\.\w+)*) import (?P<names>[\w ,]+?)"
                   r"(?P<tail>[ \t]*(?:#.*)?)$", re.M)


def _split_from(text: str, table: dict[str, str]) -> str:
    """``from cogtestbed.validation.design import a, b``: one line per package the modules now live in."""

    def repl(m: re.Match[str]) -> str:
        pkg, groups = m["pkg"], {}
        for item in (n.strip() for n in m["names"].split(",") if n.strip()):
            name = item.split()[0]
            full = f"{pkg}.{name}"
            if full in table:
                new_pkg, _, new_name = table[full].rpartition(".")
                alias = item if new_name == name else f"{new_name} as {item.split()[-1]}"
            else:
                new_pkg, alias = _rename(pkg, table), item
            groups.setdefault(new_pkg, []).append(alias)
        lines = [f"{m['indent']}from {p} import {', '.join(names)}" for p, names in groups.items()]
        lines[0] += m["tail"]
        return "\n".join(lines)

    return _FROM.sub(repl, text)


def _rename(dotted: str, table: dict[str, str]) -> str:
    for old, new in table.items():
        if dotted == old or dotted.startswith(old + "."):
            return new + dotted[len(old):]
    if dotted == "cogtestbed.validation.errors" or dotted.startswith("cogtestbed.validation.errors."):
        return "cogtestbed.study_errors" + dotted[len("cogtestbed.validation.errors"):]
    return dotted


_DOTTED = re.compile(r"(?<![\w.])cogtestbed\.validation(?:\.\w+)*")
#: A dotted name a docstring breaks after a dot (``:func:`~cogtestbed.validation.design.\\n    adaptive.compare```):
#: renamed whole, broken again after ``cogtestbed.``.
_BROKEN = re.compile(r"(?<![\w.])(cogtestbed\.validation(?:\.\w+)*\.)(\n[ \t]*)(\w+(?:\.\w+)*)")
_SHORT_DOTTED = re.compile(r"(?<![\w.])validation\.(?:design|runs|studies|conformance|errors)(?:\.\w+)*")
_PATH = re.compile(r"(?<![\w/])(?:cogtestbed/)?validation/(?:design|runs|studies|conformance|errors\.py)[\w/.]*")


def rewrite(text: str, table: dict[str, str]) -> str:
    """``text`` with every old module name and path replaced through ``table``."""
    text = _split_from(text, table)
    text = _BROKEN.sub(lambda m: "cogtestbed." + m[2] + _rename(m[1] + m[3], table)[len("cogtestbed."):], text)
    text = _DOTTED.sub(lambda m: _rename(m.group(0), table), text)
    text = _SHORT_DOTTED.sub(lambda m: _rename("cogtestbed." + m.group(0), table)[len("cogtestbed."):], text)

    def path(m: re.Match[str]) -> str:
        raw = m.group(0)
        full = raw if raw.startswith("cogtestbed/") else "cogtestbed/" + raw
        trail = "." if full.endswith(".") and not full.endswith(".py") else ""
        full = full[: len(full) - len(trail)]
        folder, _, name = full.rpartition("/")
        if "." in name and not name.endswith(".py"):  # a data file: its folder moves
            return path_of(folder, raw) + "/" + name + trail
        return path_of(full, raw) + trail

    def path_of(full: str, raw: str) -> str:
        dotted = _rename(_module(full) if full.endswith(".py") else full.rstrip("/").replace("/", "."), table)
        new = dotted.replace(".", "/") + (".py" if full.endswith(".py") else "") + ("/" if full.endswith("/") else "")
        if new.endswith(".py") and not (ROOT / new).exists() and (ROOT / new[:-3] / "__init__.py").exists():
            new = new[:-3] + "/__init__.py"  # a module that became a package (kinds.py -> kinds/__init__.py)
        if new.startswith("cogtestbed/") and not raw.startswith("cogtestbed/"):
            new = new[len("cogtestbed/"):]
        return new

    return _PATH.sub(path, text)


def _layers(text: str) -> str:
    """The layer order of the import-graph test: the four workflow packages where validation's were."""
    text = text.replace('    ("cogtestbed.validation",),  # the package and its errors\n', "")
    text = text.replace("``validation/__init__.py``", "``planning/__init__.py``")
    text = text.replace("(``cogtestbed.studies`` before ``cogtestbed.validation``)",
                        "(``cogtestbed.planning.kinds`` before ``cogtestbed.planning``)")
    return text.replace('"cogtestbed.subject_draws", "cogtestbed.bounds"),',
                        '"cogtestbed.subject_draws", "cogtestbed.bounds",\n     "cogtestbed.study_errors"),', 1) \
        if '"cogtestbed.study_errors"),' not in text else text


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True).stdout


def _text_files() -> list[Path]:
    out = []
    for rel in _git("ls-files", "--cached", "--others", "--exclude-standard").splitlines():
        p = ROOT / rel
        if (not p.is_file() or set(Path(rel).parts) & SKIP_DIRS or rel.startswith(SKIP_PATHS)
                or p.suffix not in TEXT_SUFFIXES):
            continue
        out.append(p)
    return out


def move(moves: dict[str, str], dry_run: bool) -> None:
    for old, new in moves.items():
        if not new:
            if not dry_run:
                _git("rm", "-q", old)
            continue
        dest = ROOT / new
        if not dry_run:
            dest.parent.mkdir(parents=True, exist_ok=True)
            _git("mv", old, new)
    if dry_run:
        return
    for pkg in {str(Path(n).parent) for n in moves.values() if n.endswith(".py")}:
        for parent in [Path(pkg), *Path(pkg).parents]:
            if str(parent) in {".", "cogtestbed"}:
                break
            init = ROOT / parent / "__init__.py"
            if not init.exists():
                name = parent.name.replace("_", " ")
                init.write_text(f'"""The {name} plan kind: its run, checks, text and writer."""\n'
                                if parent.parent.name == "kinds" else f'"""{name.capitalize()}."""\n',
                                encoding="utf-8")
                _git("add", str(init.relative_to(ROOT)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="print the table and the files, change nothing")
    args = parser.parse_args(argv)
    files = [f for f in _git("ls-files", OLD).splitlines() if (ROOT / f).exists()]
    files += [f for f in _git("ls-files", "--others", "--exclude-standard", OLD).splitlines() if f not in files]
    moves, unplaced = plan_moves([f for f in files if "__pycache__" not in f])
    # the table also holds the modules already moved (references a merge brings back under the old names)
    table = module_table({**recorded_moves(), **moves})
    print("module table (old -> new):")
    for old, new in sorted(table.items()):
        print(f"  {old} -> {new}")
    print(f"files to move: {len(moves)}")
    for old, new in moves.items():
        print(f"  {old} -> {new or '(deleted)'}")
    move(moves, args.dry_run)
    changed = []
    for path in _text_files():
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        new = rewrite(text, table)
        if path.relative_to(ROOT).as_posix() == "tests/test_import_graph.py":
            new = _layers(new)
        if new != text:
            changed.append(path)
            if not args.dry_run:
                path.write_text(new, encoding="utf-8", errors="surrogateescape")
    print(f"files rewritten: {len(changed)}")
    for path in changed:
        print(f"  {path.relative_to(ROOT)}")
    py = [str(p) for p in changed if p.suffix == ".py"]
    if py and not args.dry_run:
        ruff = Path(sys.executable).with_name("ruff")
        subprocess.run([str(ruff) if ruff.exists() else "ruff", "check", "-q", "--select", "I", "--fix", *py],
                       cwd=ROOT, check=False)
    left = [p for p in (ROOT / OLD).rglob("*") if p.is_file() and "__pycache__" not in p.parts] \
        if (ROOT / OLD).exists() else []
    if unplaced or (left and not args.dry_run):
        print("could not place (move by hand, then add a rule):")
        for rel in unplaced or [str(p.relative_to(ROOT)) for p in left]:
            print(f"  {rel}")
        return 1
    print("could not place: none")
    return 0


def recorded_moves() -> dict[str, str]:
    """Moves this script made before (read back from the current tree: every module of the new packages whose
    old place the rules give), so a later run still rewrites references a merge brings under the old names."""
    out = {}
    for new_pkg, sub in (("cogtestbed/runs", "runs"), ("cogtestbed/studies", "studies"),
                         ("cogtestbed/conformance", "conformance"), ("cogtestbed/planning", "design")):
        for p in (ROOT / new_pkg).rglob("*.py") if (ROOT / new_pkg).exists() else []:
            rel = p.relative_to(ROOT).as_posix()
            for name in (p.name, f"{p.parent.name}.py"):
                old = f"{OLD}/{sub}/{name}"
                if target_of(old) == rel:
                    out[old] = rel
    if (ROOT / "cogtestbed/study_errors.py").exists():
        out[f"{OLD}/errors.py"] = "cogtestbed/study_errors.py"
    return out


if __name__ == "__main__":
    raise SystemExit(main())
