"""Deprecated: the server moved to :mod:`cogtestbed.llm_adapters.servers.server` (issue 51), and its command
line is ``cogtestbed serve`` (issue 72).  Importing this module warns once and gives the same names;
``python -m cogtestbed.llm_adapters.server ARGS`` prints one deprecation line and runs ``cogtestbed serve ARGS``."""

from __future__ import annotations

import warnings

from cogtestbed.llm_adapters.servers.server import (  # noqa: F401 - the names this module had
    SHUTDOWN_GRACE_SECONDS,
    create_app,
    fault_injector,
    main,
    run_server,
    serve,
    serve_app,
)

if __name__ == "__main__":
    main(module="cogtestbed.llm_adapters.server")
else:
    warnings.warn("cogtestbed.llm_adapters.server is deprecated; import cogtestbed.llm_adapters.servers.server "
                  "(the command line: `cogtestbed serve`)", DeprecationWarning, stacklevel=2)
