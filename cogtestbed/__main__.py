"""``python -m cogtestbed`` runs the command line (in a process of its own: quick exit)."""

from cogtestbed.cli import console_main

console_main()
