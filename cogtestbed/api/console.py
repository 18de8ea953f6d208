"""The stderr console of the library's long jobs (an LLM run's progress lines and summary, a
sequential run's looks): a rich console built on first use, so importing the API loads no rich."""

from __future__ import annotations

from typing import Any


class _Err:
    """A rich console on stderr, built on first use."""

    _console: Any = None

    def __getattr__(self, name: str) -> Any:
        if _Err._console is None:
            from rich.console import Console

            _Err._console = Console(stderr=True)
        return getattr(_Err._console, name)


console_err: Any = _Err()
