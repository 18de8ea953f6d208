"""Test support outside the wheel: emulators that only the tests and the studies of ``benchmarks/`` use.

* :mod:`support.batch_emulator` — the OpenAI and Anthropic batch APIs on 127.0.0.1
  (``PYTHONPATH=tests python -m support.batch_emulator``);
* :mod:`support.leaky_server` — a server echoing the caller's key in every form.

The tests import them as ``support.…`` (pytest puts ``tests/`` on the path); a study adds ``tests/`` itself.
"""
