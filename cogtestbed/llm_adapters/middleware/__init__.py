"""What wraps a client in a run, between the run machinery and the backends.

* :mod:`.cache` — the response cache (:class:`~.cache.CachedClient`: every call booked, cached, retried);
* :mod:`.retry` — the retry policy and the one retry loop every backend's calls go through;
* :mod:`.limits` — rate limits and the run's budget (its ledger);
* :mod:`.batch` — batch mode: the provider protocol, the two providers, the run's batch record, the
  batching client and the batch prices.

This package's ``__init__`` imports nothing, so a module of it is loaded on use.
"""
