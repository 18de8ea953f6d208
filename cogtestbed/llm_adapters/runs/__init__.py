"""LLM runs: real LLMs played as subjects, apart from the clients that call them.

* :mod:`.agent` — :class:`~.agent.LLMAgent`, the subject adapter (prompt, answer, parse, re-ask);
* :mod:`.config` — a run's configuration (:class:`~.config.RunConfig`) and result, subjects' forms,
  seeds and sessions;
* :mod:`.runner` — playing the subjects and writing the run (``cogtestbed run``);
* :mod:`.requests` — the requests a run makes, counted before it makes them, and a subject's worst
  case (what the budget admits it for);
* :mod:`.pricing` — the dry run: those requests priced (``run --dry-run``, ``plan``'s LLM pricing);
* :mod:`.hidden_tokens` — a reasoning model's hidden tokens, from a pilot or an assumption;
* :mod:`.rundir` — the run directory (lock, ``run.json``, ledger, one-unit commits);
* :mod:`.transcript` — an in-process model's choice log-likelihood on a marked transcript.

This package's ``__init__`` imports nothing, so a module of it is loaded on use.
"""
