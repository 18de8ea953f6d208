"""A run directory: its lock, its manifest (``run.json``), its spend ledger, and one-unit commits.

``run.json`` holds ``config`` (the run's identity: what determines its calls, checked by
``--resume``), ``endpoint`` (the server's address, the served model as the server lists it, whether
the cache is shared across servers, and every ``system_fingerprint`` seen: checked by ``--resume``,
:func:`endpoint_change`), ``transport`` (how the calls travel: timeout, concurrency, rate limits,
retry window — free to change on ``--resume``; the base URL too, where the cache is shared),
``request`` (the options the latest invocation was given, as ``ct.run`` and ``cogtestbed run`` record
them: :func:`cogtestbed.request.request_block`; free to change on ``--resume``),
``budget`` (the run's total ``max_calls`` / ``max_cost``: every invocation on the directory spends
from the same totals) and ``status``:
``running``, ``complete``, ``stopped`` (a budget stop), or ``failed`` (with ``error``).

* **Lock**: an invocation holds an exclusive ``fcntl`` lock on ``RUN_DIR/.lock`` (``filelock``)
  for its whole life; a second one on the same directory fails at once.  The kernel drops the lock
  when a process dies, so a killed run never leaves a stale lock behind.
* **Ledger**: ``RUN_DIR/spend.jsonl`` gets a line when a call's worst case is booked and one when
  it settles (:func:`cogtestbed.llm_adapters.middleware.limits.read_ledger`), so the totals survive a kill,
  and one with the cache key of each answer the run paid for
  (:func:`~cogtestbed.llm_adapters.middleware.limits.read_paid_keys`): replayed on ``--resume``, those
  answers are the run's calls, not cache hits.
* **Commit**: the tables and the manifest are first all written to temporary files beside their
  targets (the step that can fail: disk full, permissions, a bad value), then renamed into place
  in one go, ``run.json`` last; a failed commit leaves the previous files untouched.  Files get
  the permissions of the process's umask (0644 by default), like any other file.
* **Failure**: a run that fails before its first paid call leaves no trace (the files it created
  are removed, and the directory if it made it); one that fails later is marked ``failed`` with
  the error, and ``--resume`` continues it from the cache.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from filelock import FileLock, Timeout

from cogtestbed.errors import CogtestbedError, ResumeMismatch
from cogtestbed.llm_adapters.middleware.limits import Spend, read_ledger, read_paid_keys
from cogtestbed.outputs import new_file_mode, write_failure
from cogtestbed.redact import redact, redact_json
from cogtestbed.trials import package_versions, write_files_together

CONFIG_FILE, LEDGER_FILE, LOCK_FILE = "run.json", "spend.jsonl", ".lock"
#: Settings that say how calls travel, not which calls a run makes: changing them on ``--resume``
#: changes no answer (the cache key holds none of them).
TRANSPORT_FIELDS = ("base_url", "timeout", "concurrency", "rpm", "tpm", "retry_for")


def _raised(total: Any, add: float, name: str, flag: str) -> Any:
    """A budget limit raised by ``add`` (``add_budget``), refused where the run has none."""
    if not add:
        return total
    if total is None:
        raise RunDirError(f"`add_budget` {flag}=...: the run has no `{name}` limit to raise")
    return total + add


class RunDirError(CogtestbedError, ValueError):
    """The run directory cannot be used as asked (locked, exists, mismatched, unwritable)."""


def check_run_dir(path: Path, resume: bool) -> None:
    """Cheap checks before anything is loaded or called: ``path`` can hold a run as asked."""
    if path.exists() and not path.is_dir():
        raise RunDirError(f"-o {path}: exists and is not a directory")
    config = path / CONFIG_FILE
    if resume and not config.exists():
        raise RunDirError(f"`resume`: no run in {path} (no {CONFIG_FILE})")
    if not resume and config.exists():
        status = _read_json(config).get("status")
        raise RunDirError(f"{path} already holds a run (status {status}); pass `resume` to continue it "
                          "(answers come from the cache) or choose another directory")
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not os.access(existing, os.W_OK | os.X_OK):
        raise RunDirError(f"-o {path}: {existing} is not writable")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise RunDirError(f"{path} is not a readable run manifest: {exc}") from exc
    if not isinstance(data, dict):
        raise RunDirError(f"{path} is not a run manifest")
    return data


def identity_differences(mine: Mapping[str, Any], stored: Mapping[str, Any]) -> list[str]:
    """Identity settings that differ (transport settings are ignored)."""
    keys = (set(mine) | set(stored)) - set(TRANSPORT_FIELDS)
    return [k for k in sorted(keys) if mine.get(k) != stored.get(k)]


def endpoint_change(mine: Mapping[str, Any] | None, stored: Mapping[str, Any] | None) -> str | None:
    """Why the endpoint ``mine`` is not the one a run ``stored`` (None: the same, or either unknown).

    Without a shared cache the address must be the same; with one (``shared_cache``, given as when
    the run started) another address may serve the run.  Either way, where both listings name the
    served model (:meth:`LLMClient.endpoint_identity`), they must agree."""
    if not mine or not stored:
        return None
    if bool(mine.get("shared_cache")) != bool(stored.get("shared_cache")):
        return ("was started " + ("with" if stored.get("shared_cache") else "without")
                + " `share_cache`; give it (or leave it out) as then")
    if not mine.get("shared_cache") and mine.get("url") != stored.get("url"):
        return (f"was run against {stored.get('url')}, this invocation reaches {mine.get('url')}; its cached "
                "answers are that server's (`share_cache`, given when a run starts, lets another address "
                "serve the same model)")
    before, now = stored.get("served_model"), mine.get("served_model")
    if before and now and before != now:
        return (f"was run against a server listing the model as {json.dumps(before, sort_keys=True)}, "
                f"{mine.get('url')} lists {json.dumps(now, sort_keys=True)}: another model under the same name")
    return None


class RunDir:
    """An open, locked run directory (see module docstring).  Use :meth:`open`."""

    def __init__(self, path: Path, lock: FileLock, created_dir: bool, stored: dict[str, Any] | None) -> None:
        self.path, self.lock, self.created_dir, self.stored = path, lock, created_dir, stored
        self.manifest: dict[str, Any] = dict(stored or {})
        self._ledger: IO[str] | None = None

    # -- opening -----------------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path, config: Mapping[str, Any], *, resume: bool,
             transport: Mapping[str, Any] | None = None, endpoint: Mapping[str, Any] | None = None,
             request: Mapping[str, Any] | None = None) -> RunDir:
        """Check, create and lock ``path``; compare ``config`` and ``endpoint`` (where the calls go and
        what serves them: :func:`endpoint_change`) with the stored ones on resume.  ``request``: the
        options this invocation was given, recorded as the ``request`` block (like ``transport``, the
        latest invocation's; never compared on resume: ``config`` is the run's identity)."""
        check_run_dir(path, resume)
        created = not path.exists()
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RunDirError(f"-o {path}: cannot create the run directory ({exc.strerror})") from exc
        lock = FileLock(str(path / LOCK_FILE), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise RunDirError(f"{path} is in use by another cogtestbed run; wait for it to finish "
                              "(or choose another directory)") from None
        except OSError as exc:
            raise RunDirError(f"-o {path}: cannot lock the run directory ({exc.strerror})") from exc
        self = cls(path, lock, created, None)
        try:
            check_run_dir(path, resume)  # again, under the lock (another run may have started)
            if resume:
                self._resume_stored(config, endpoint)
            self.manifest.update(config=dict(config), transport=dict(transport or {}), status="running",
                                 error=None, versions=package_versions())  # of this (latest) invocation
            if request is not None:
                self.manifest["request"] = dict(request)
            if endpoint is not None:
                fingerprints = (self.stored or {}).get("endpoint", {}).get("system_fingerprints", [])
                self.manifest["endpoint"] = {**endpoint, "system_fingerprints": fingerprints}
            self.write_manifest()
        except BaseException:
            self.abandon()
            raise
        return self

    def _resume_stored(self, config: Mapping[str, Any], endpoint: Mapping[str, Any] | None) -> None:
        """Read the stored manifest on resume; refuse another identity or endpoint."""
        path = self.path
        self.stored = _read_json(path / CONFIG_FILE)
        self.manifest = dict(self.stored)
        diff = identity_differences(config, self.stored.get("config", {}))
        if diff:
            raise ResumeMismatch(f"`resume`: {path} was run with different settings ({', '.join(diff)}); "
                                 f"only {', '.join(TRANSPORT_FIELDS)} may change")
        why = endpoint_change(endpoint, self.stored.get("endpoint"))
        if why is not None:
            raise ResumeMismatch(f"`resume`: {path} {why}")

    # -- budget ------------------------------------------------------------------------------
    def budget_limits(self, max_calls: int | None, max_cost: float | None,
                      add_calls: int = 0, add_usd: float = 0.0) -> tuple[int | None, float | None]:
        """The run's total limits: the stored ones (a new run: the given ones), raised by
        ``add_*``.  A limit given again on resume must equal the stored one."""
        stored = (self.stored or {}).get("budget", {}) if self.stored else {}
        limits: list[Any] = []
        for name, given, add, flag in (("max_calls", max_calls, add_calls, "calls"),
                                       ("max_cost", max_cost, add_usd, "usd")):
            old = stored.get(name)
            if self.stored is not None and old is not None and given is not None and given != old:
                raise RunDirError(f"`{name}` {given}: this run's total is {old}; "
                                  f"raise it with `add_budget` {flag}=AMOUNT")
            limits.append(_raised(old if old is not None else given, add, name, flag))
        self.manifest["budget"] = {"max_calls": limits[0], "max_cost": limits[1]}
        self.write_manifest()
        return limits[0], limits[1]

    def spent(self) -> Spend:
        ledger = self.path / LEDGER_FILE
        if not ledger.exists():
            return Spend()
        with ledger.open() as fh:
            return read_ledger(fh)

    def paid_keys(self) -> set[str]:
        """The cache keys of the answers this run directory paid for, in every earlier invocation."""
        ledger = self.path / LEDGER_FILE
        if not ledger.exists():
            return set()
        with ledger.open() as fh:
            return read_paid_keys(fh)

    def ledger_writer(self) -> Callable[[dict[str, object]], None]:
        """Append one JSON line per event (flushed at once, so a kill loses at most a half line)."""
        path = self.path / LEDGER_FILE
        fh = path.open("a")
        with contextlib.suppress(OSError):
            os.chmod(path, new_file_mode())
        self._ledger = fh

        def write(event: dict[str, object]) -> None:
            try:
                fh.write(json.dumps(event) + "\n")
                fh.flush()
            except OSError as exc:  # a full disk: named; a half line is skipped by read_ledger
                failed = write_failure(exc, path)
                if failed is None:
                    raise
                raise failed from exc

        return write

    # -- writing -----------------------------------------------------------------------------
    def write_manifest(self) -> None:
        self.commit({}, self.manifest)

    def commit(self, files: Mapping[str, Callable[[Path], object]], manifest: Mapping[str, Any]) -> None:
        """Write every file of ``files`` (name → writer of a path) and ``run.json`` (renamed last)
        as one unit (:func:`~cogtestbed.trials.write_files_together`)."""
        writers = {self.path / name: write for name, write in files.items()}
        writers[self.path / CONFIG_FILE] = _json_writer(manifest)
        write_files_together(writers)
        self.manifest = dict(manifest)

    def fail(self, error: BaseException) -> None:
        """Leave the directory consistent after ``error`` (see module docstring)."""
        paid = self.spent().answered > 0  # requests refused with an error status bill nothing
        if self.stored is None and not paid:
            self.abandon()
            return
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        message = redact(message)
        with contextlib.suppress(OSError):
            self.commit({}, {**self.manifest, "status": "failed", "error": message})

    def abandon(self) -> None:
        """Remove what a fresh run created (nothing was paid for); release the lock."""
        if self.stored is None:
            for name in (CONFIG_FILE, LEDGER_FILE):
                with contextlib.suppress(FileNotFoundError):
                    (self.path / name).unlink()
        self.release()
        if self.stored is None:
            with contextlib.suppress(FileNotFoundError):
                (self.path / LOCK_FILE).unlink()
            if self.created_dir:
                with contextlib.suppress(OSError):
                    self.path.rmdir()

    def release(self) -> None:
        if self._ledger is not None:
            # every event was flushed as written: a close that fails can only retry a line whose
            # write already failed (and was reported), never hide one
            with contextlib.suppress(OSError):
                self._ledger.close()
            self._ledger = None
        self.lock.release()


def _json_writer(obj: Mapping[str, Any]) -> Callable[[Path], object]:
    """Writes ``obj`` as JSON, every string redacted (:func:`~cogtestbed.redact.redact_json`)."""
    from cogtestbed.no_data import json_safe

    return lambda tmp: tmp.write_text(json.dumps(redact_json(json_safe(obj)), indent=2, sort_keys=True,
                                                 default=str, allow_nan=False))

