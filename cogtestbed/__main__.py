"""``python -m cogtestbed`` runs the command line (in a process of its own: quick exit, and the
garbage collector deferred from the first import on, :mod:`cogtestbed.collector`)."""

from cogtestbed.collector import defer_collection

defer_collection()

from cogtestbed.cli import console_main  # noqa: E402  (imported with the collector deferred)

console_main()
