"""Every command's options as the command line parses them (issue 51, item 2): spellings, default,
type, help, limits, whether required.  Run it on two checkouts and compare the dumps::

    PYTHONPATH=/path/to/old python benchmarks/cli_options.py > before.json
    PYTHONPATH=. python benchmarks/cli_options.py > after.json
    python benchmarks/cli_options.py --compare before.json after.json

``--compare`` prints each option that differs and ``N commands; identical options: True/False``.
Options are matched by their spellings (``--param``), not by the parameter's Python name.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def dump() -> dict[str, dict[str, dict[str, Any]]]:
    """Command name → option → what the command line makes of it."""
    import typer.main

    from cogtestbed.cli import app

    def walk(prefix: str, group: Any) -> Any:
        for name, command in sorted(group.commands.items()):
            if hasattr(command, "commands"):
                yield from walk(prefix + name + " ", command)
            else:
                yield prefix + name, command

    out: dict[str, dict[str, dict[str, Any]]] = {}
    for name, command in walk("", typer.main.get_command(app)):
        params = {}
        for p in command.params:
            opts = sorted(p.opts + p.secondary_opts)
            params[" ".join(opts) if p.param_type_name == "option" else f"<{p.name}>"] = {
                "default": repr(p.default), "type": repr(getattr(p, "type", None)),
                "help": " ".join((getattr(p, "help", "") or "").split()), "required": p.required,
                "show_default": repr(getattr(p, "show_default", None)), "multiple": getattr(p, "multiple", None),
                "nargs": getattr(p, "nargs", None), "flag": getattr(p, "is_flag", None)}
        out[name] = params
    return out


def compare(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Print each option that differs; whether none does."""
    same = before.keys() == after.keys()
    for command in sorted(before.keys() | after.keys()):
        a, b = before.get(command, {}), after.get(command, {})
        for option in sorted(a.keys() | b.keys()):
            if a.get(option) != b.get(option):
                same = False
                print(f"{command} {option}: {a.get(option)} -> {b.get(option)}")
    print(f"{len(after)} commands; identical options: {same}")
    return same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        with open(args.compare[0]) as a, open(args.compare[1]) as b:
            sys.exit(0 if compare(json.load(a), json.load(b)) else 1)
    json.dump(dump(), sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
