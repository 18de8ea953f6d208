"""Output paths: one policy for every command that writes.

* an output is checked **before** anything is computed: its folder can be created and written,
  and an existing output is refused unless ``--force`` is given (one overwrite policy for every
  command: :func:`check_output_file`, :func:`output_dir`);
* folders created for a command that then fails are removed again (no empty ``-o`` folders); one
  ended by a signal leaves none, also where it ends at once (:func:`remove_created_outputs`);
* every file is written to a temporary name and renamed (:func:`atomic_write_bytes`), with the
  permissions an ordinary ``open()`` would give it (``0666`` less the umask), so a failure never
  leaves a half-written file and atomic files look like every other file.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from cogtestbed.errors import CogtestbedError

#: Permissions of a newly created file before the umask is applied (what ``open(path, "w")`` uses).
DEFAULT_FILE_MODE = 0o666


class OutputError(CogtestbedError, ValueError):
    """An output path that cannot be used (exists without ``--force``, not writable, wrong kind)."""


class WriteFailed(OutputError):
    """A file could not be written for the machine's reasons (full disk, quota, read-only file
    system, file too large, I/O error): one line naming the path.  Atomic writes leave what was
    there before; a run directory keeps every finished subject (``run --resume`` continues)."""


#: errno values of a write that failed for the machine's reasons, not the user's input.
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO})
#: SQLite's names for the same failures (``sqlite3.Error.sqlite_errorname``).
SQLITE_WRITE_ERRORS = ("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_READONLY", "SQLITE_CANTOPEN")


def _errno(exc: BaseException) -> int | None:
    """The errno of an OS error, also where only its message carries it (pyarrow's
    ``OSError: [Errno 28] Error writing bytes to file``)."""
    if not isinstance(exc, OSError):
        return None
    if exc.errno is not None:
        return int(exc.errno)
    import re

    found = re.search(r"\[errno (\d+)\]", str(exc), re.IGNORECASE)
    return int(found.group(1)) if found else None


def write_failure(exc: BaseException, path: str | os.PathLike[str] | None = None) -> WriteFailed | None:
    """``exc`` as a :class:`WriteFailed` naming ``path`` (or the file the error names) when it is a
    write that failed for the machine's reasons (:data:`WRITE_ERRNOS`, SQLite's full or I/O
    errors); ``None`` for any other exception."""
    if isinstance(exc, WriteFailed):
        return exc
    code = _errno(exc)
    name = getattr(exc, "sqlite_errorname", None)
    if code in WRITE_ERRNOS:
        why = os.strerror(code) if code is not None else str(exc)
    elif isinstance(name, str) and name.startswith(SQLITE_WRITE_ERRORS):
        why = f"{exc} ({name})"
    else:
        return None
    where = path if path is not None else getattr(exc, "filename", None)
    return WriteFailed(f"cannot write {where if where is not None else 'an output file'}: {why}")


def new_file_mode() -> int:
    """The mode ``open()`` gives a new file: :data:`DEFAULT_FILE_MODE` less the process umask."""
    mask = os.umask(0)
    os.umask(mask)
    return DEFAULT_FILE_MODE & ~mask


def atomic_write_bytes(path: Path, write: Callable[[Path], Any]) -> None:
    """Call ``write(tmp_path)`` then rename onto ``path`` (no half file on failure).

    The temporary file is created by :func:`tempfile.mkstemp` (mode 0600); it is given the mode an
    ordinary ``open()`` would have given ``path`` before the rename.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise write_failure(exc, path) or exc from exc
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, new_file_mode())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        failed = write_failure(exc, path)
        if failed is not None and failed is not exc:
            raise failed from exc
        raise


#: What this process's open output blocks (:func:`output_dir`, :func:`claim_file`) created: one entry per block, the
#: process's id (a forked worker inherits the list, not the folders) and the folders it created, innermost first (the
#: block's own folder, then missing parents).
_CREATED: list[tuple[int, list[Path]]] = []
#: The claim markers this process holds (:func:`_claimed`), with its id.
_HELD_CLAIMS: list[tuple[int, Path]] = []


def _remove_created(created: list[Path], whole: bool) -> None:
    """Remove the folders ``created`` by one output block (innermost first): each only where empty, or with
    ``whole`` the innermost with what it holds (the block's own folder: only this command wrote there; its parents
    still only where empty).  A file written while the folder is removed (a worker's) is caught by a second pass."""
    for i, folder in enumerate(created):
        if whole and i == 0:
            for _ in range(2):
                shutil.rmtree(folder, ignore_errors=True)
                if not os.path.lexists(folder):
                    break
        else:
            with contextlib.suppress(OSError):
                folder.rmdir()


def remove_created_outputs() -> None:
    """Remove what this process's open output blocks created, for a process that ends at once (a signal with no
    place to raise: :mod:`cogtestbed.cli.signals`), where the blocks' own clean-up will not run: the folders they
    created with what they hold (as a block does when a signal's exception unwinds it), and the claim markers this
    process holds.  A folder that existed before the command is kept with its files; nothing outside the created
    folders is touched; a forked process removes nothing of its parent's.  Light enough for a signal handler:
    file-system calls only."""
    me = os.getpid()
    for pid, marker in list(_HELD_CLAIMS):
        if pid == me:
            with contextlib.suppress(OSError):
                marker.unlink()
    for pid, created in reversed(list(_CREATED)):  # the innermost block first
        if pid == me:
            _remove_created(created, whole=True)


@contextlib.contextmanager
def _created_by_block(created: list[Path]) -> Iterator[None]:
    """Hold ``created`` (the folders an output block is about to create) in :data:`_CREATED` while the block runs;
    remove them if it raises: where empty, or with what they hold when a signal's exception (``KeyboardInterrupt``,
    a ``SystemExit`` such as :class:`cogtestbed.cli.signals.Terminated`) ends the command."""
    entry = (os.getpid(), created)
    _CREATED.append(entry)
    try:
        yield
    except BaseException as exc:
        _remove_created(created, whole=isinstance(exc, (KeyboardInterrupt, SystemExit)))
        raise
    finally:
        _CREATED.remove(entry)


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _missing_parents(path: Path) -> list[Path]:
    """``path`` and its ancestors that do not exist yet (outermost last)."""
    out = []
    p = path.absolute()
    while not p.exists() and p != p.parent:
        out.append(p)
        p = p.parent
    return out


def _probe_folder(folder: Path, what: str) -> None:
    """Check ``folder`` (existing) takes new files."""
    if not folder.is_dir():
        raise OutputError(f"{what}: {folder} is not a folder")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-test-"):
            pass
    except OSError as exc:
        raise OutputError(f"{what}: cannot write to {folder}: {_why(exc)}") from None


def _nearest_existing(path: Path) -> Path:
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def check_output_file(path: Path, force: bool = False, suffix: str | None = None) -> Path:
    """Check a file output before computing: the right suffix, not an existing file unless
    ``force``, not a folder, and its folder writable (or creatable under a writable folder)."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(f"output {path} is a folder; give a file name")
    if suffix is not None and path.suffix != suffix:
        raise OutputError(f"output must end in {suffix}, got {path}")
    if path.exists() and not force:
        raise OutputError(f"output {path} exists; pass `force` to overwrite it")
    _probe_folder(_nearest_existing(path.parent), f"output {path}")
    return path


#: The marker a command holds in an output folder while it writes there (:func:`claim_folder`).
CLAIM_FILE = ".cogtestbed-writing"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def _take_claim(marker: Path) -> bool:
    """Create ``marker`` exclusively (this process's id in it): True when this call created it,
    False when this process holds it already; a live other holder is refused, a dead one's taken over."""
    for _ in range(2):
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                holder = int(marker.read_text().strip() or 0)
            except (OSError, ValueError):
                holder = 0
            if holder == os.getpid():
                return False
            if holder and _alive(holder):
                what = f"output folder {marker.parent}" if marker.name == CLAIM_FILE else \
                    f"output {marker.parent / marker.name[1:].removesuffix(CLAIM_FILE)}"
                raise OutputError(f"{what} is being written by another command (process {holder}); wait for it "
                                  "or choose another path") from None
            with contextlib.suppress(FileNotFoundError):  # a claim left by a killed command
                marker.unlink()
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return True
    raise OutputError(f"output folder {marker.parent} is being claimed by another command; try again")


@contextlib.contextmanager
def claim_folder(path: Path, force: bool = False) -> Iterator[Path]:
    """Claim the existing folder ``path`` for this command while the body runs: atomically (a
    marker file created exclusively, so of two commands started at once one wins and the other is
    refused, whatever ``force`` says), then refuse a folder that holds files unless ``force``.
    Re-entrant within one process; the marker is removed at the end."""
    with _claimed(path / CLAIM_FILE) as ours:
        if ours and not force and any(p.name != CLAIM_FILE for p in path.iterdir()):
            raise OutputError(f"output folder {path} is not empty; pass `force` to overwrite its files")
        yield path


@contextlib.contextmanager
def claim_file(path: Path, force: bool = False) -> Iterator[Path]:
    """Claim the output file ``path`` while the body computes and writes it: a marker beside it
    (``.NAME.cogtestbed-writing``) created exclusively, so of two commands writing one file at once
    one wins and the other is refused; then an existing ``path`` is refused unless ``force``.  Missing
    folders of ``path`` are created first (the marker lives there) and removed again, where still
    empty, if the body raises (with what they hold, if a signal ends the command: :func:`_created_by_block`).
    Taking the claim removes the temporary files of ``path`` a killed writer left (:func:`remove_stale_temps`):
    no other command can be writing them."""
    path = Path(path)
    with _created_by_block(_missing_parents(path.parent)):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot create the folder of output {path}: {_why(exc)}") from None
        with _claimed(path.with_name(f".{path.name}{CLAIM_FILE}")) as ours:
            if ours and not force and path.exists():
                raise OutputError(f"output {path} exists; pass `force` to overwrite it")
            if ours:
                remove_stale_temps(path)
            yield path


def remove_stale_temps(path: Path) -> list[Path]:
    """Remove the temporary files of ``path`` and of its manifest (``.NAME.*.tmp``, as :func:`atomic_write_bytes`
    and :func:`cogtestbed.trials.write_files_together` name them) that a writer killed before its rename left
    behind (a killed streamed ``simulate -o`` leaves its partial table); call it only while holding the claim
    of ``path``.  Returns what it removed."""
    removed = []
    for left in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        with contextlib.suppress(FileNotFoundError, IsADirectoryError, PermissionError):
            left.unlink()
            removed.append(left)
    return removed


@contextlib.contextmanager
def _claimed(marker: Path) -> Iterator[bool]:
    """Hold the claim ``marker`` while the body runs (:func:`_take_claim`; True when this call took
    it, False when this process already held it), removing a marker it took at the end."""
    ours, held = _take_claim(marker), (os.getpid(), marker)
    if ours:
        _HELD_CLAIMS.append(held)
    try:
        yield ours
    finally:
        if ours:
            with contextlib.suppress(FileNotFoundError):
                marker.unlink()
            _HELD_CLAIMS.remove(held)


@contextlib.contextmanager
def output_dir(path: Path | None, force: bool = False) -> Iterator[Path | None]:
    """Prepare and claim the output folder ``path`` before computing; remove what was created on failure.

    Refused at once: ``path`` is a file; it is a non-empty folder and ``force`` is false; another
    command is writing there (:func:`claim_folder`: of two commands started at once, one wins); it
    cannot be created or written.  The folder (and missing parents) are created up front so the
    check is real, and removed again if the body raises (only folders this call created, only if
    empty; if a signal ends the command, the output folder with what it holds: :func:`_created_by_block`, and
    :func:`remove_created_outputs` where the process ends at once).  ``None`` (no ``-o``) passes through.
    """
    if path is None:
        yield None
        return
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputError(f"output {path} exists and is not a folder")
    with _created_by_block(_missing_parents(path)):
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot create output folder {path}: {_why(exc)}") from None
        _probe_folder(path, f"output folder {path}")
        with claim_folder(path, force):
            yield path
