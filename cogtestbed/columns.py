"""Compiled builders of trial-table columns: text columns from codes, and the rows a table keeps.

**Text.**  Arrow ``large_string`` columns of ``vocabulary[codes]`` without one Python object per
row.  A trial table's text stimulus columns take a few distinct values over many rows.  Arrow's ``take``
of a small vocabulary appends row by row with a data-dependent copy length, and the unpredictable
branches it takes cost more than the bytes (10–15 ns a row on short strings).  Here every row is
copied as the same number of 16-byte words, ``ceil(widest / 16)``, from a vocabulary whose entries
are zero-padded to that width: the loop has a fixed trip count and no branch on the row's length.
Rows are written in order, each at its own offset, so the padding a row writes past its end is
overwritten by the next row; the data buffer has one padded width to spare after the last row and
Arrow sees only the bytes the offsets cover.

**Kept rows.**  :func:`kept_rows` finds the cells of an (n_subjects, n_steps) mask a table keeps,
with their subject and position, in one branch-free pass (a division per row otherwise).

**Per-subject columns.**  :func:`spread` repeats several per-subject columns over each subject's
rows in one pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from cogtestbed.jit_cache import compiled_pays

#: Columns shorter than this take Arrow's own ``take`` until the compiled copy is loaded: loading it
#: (~25 ms once per process) costs more than Arrow spends on them (~15 ns a row), e.g. in an importer.
COMPILED_MIN_ROWS = 200_000
#: Bytes one word copy moves (an unaligned 128-bit load and store: one SSE2 register).
WORD = 16


@intrinsic
def _copy_word(typingctx: Any, dst: Any, src: Any) -> Any:
    """Copy :data:`WORD` bytes from address ``src`` to address ``dst`` (unaligned; a constant-size
    ``memcpy`` that compiles to one load and one store)."""
    sig = types.void(dst, src)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> None:
        d, s = args
        cgutils.raw_memcpy(builder, builder.inttoptr(d, cgutils.voidptr_t), builder.inttoptr(s, cgutils.voidptr_t),
                           context.get_constant(types.intp, WORD), 1)

    return sig, codegen


@njit(cache=True)
def _total_bytes(codes: np.ndarray, lengths: np.ndarray, missing: np.ndarray) -> tuple[int, int, int]:
    """(bytes of ``vocabulary[codes]``, missing values among them, position of the first code
    outside the vocabulary or −1)."""
    total, nulls, k = 0, 0, lengths.size
    for i in range(codes.size):
        c = codes[i]
        if c < 0 or c >= k:
            return total, nulls, i
        total += lengths[c]
        nulls += missing[c]
    return total, nulls, -1


@njit(cache=True)
def _copy_rows(codes: np.ndarray, lengths: np.ndarray, padded: np.ndarray, width: int,
               total: int) -> tuple[np.ndarray, np.ndarray]:
    """Arrow offsets (n + 1 running byte counts) and data buffer: row i's padded entry (``width``
    bytes, a multiple of :data:`WORD`, at ``padded[codes[i] * width]``) copied to its offset,
    ``width`` bytes to spare at the end."""
    n = codes.size
    offsets = np.empty(n + 1, dtype=np.int64)
    data = np.empty(total + width, dtype=np.uint8)
    dst, src = data.ctypes.data, padded.ctypes.data
    end = 0
    offsets[0] = 0
    for i in range(n):
        c = codes[i]
        row, entry = dst + end, src + c * width
        for w in range(0, width, WORD):
            _copy_word(row + w, entry + w)
        end += lengths[c]
        offsets[i + 1] = end
    return offsets, data


def take_strings(codes: np.ndarray, vocabulary: Sequence[str | None], compiled: bool | None = None) -> pa.Array:
    """The Arrow ``large_string`` array of ``vocabulary[codes]`` (None: missing), equal to Arrow's
    ``take`` of the vocabulary; ``ValueError`` for a code outside the vocabulary.  ``compiled``:
    whether to use the compiled copy (default: see :data:`COMPILED_MIN_ROWS`)."""
    flat = np.ascontiguousarray(codes, dtype=np.int64).reshape(-1)
    if compiled is None:
        compiled = compiled_pays(flat.size, COMPILED_MIN_ROWS, _copy_rows)
    if not compiled:
        if flat.size and (flat.min() < 0 or flat.max() >= len(vocabulary)):
            bad = int(flat[(flat < 0) | (flat >= len(vocabulary))][0])
            raise ValueError(f"string codes must lie in 0..{len(vocabulary) - 1}, got {bad}")
        return pa.array(list(vocabulary), type=pa.large_string()).take(pa.array(flat))
    encoded = [b"" if v is None else v.encode() for v in vocabulary]
    lengths = np.array([len(e) for e in encoded], dtype=np.int64)
    missing = np.array([v is None for v in vocabulary], dtype=bool)
    total, null_count, bad = _total_bytes(flat, lengths, missing)
    if bad >= 0:
        raise ValueError(f"string codes must lie in 0..{len(encoded) - 1}, got {flat[bad]}")
    width = max(WORD, -(-int(lengths.max(initial=0)) // WORD) * WORD)
    padded = np.frombuffer(b"".join(e.ljust(width, b"\0") for e in encoded), dtype=np.uint8)
    offsets, data = _copy_rows(flat, lengths, padded, width, total)
    validity = pa.py_buffer(np.packbits(~missing[flat], bitorder="little")) if null_count else None
    return pa.LargeStringArray.from_buffers(flat.size, pa.py_buffer(offsets), pa.py_buffer(data), validity,
                                            null_count=null_count)


@njit(cache=True)
def _kept_rows(keep: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n, steps = keep.shape
    m = 0
    for i in range(n):
        for j in range(steps):
            m += keep[i, j]
    # every cell is written at the next free slot and the slot advances only when it is kept
    rows, subject, position = np.empty(m + 1, np.int64), np.empty(m + 1, np.int64), np.empty(m + 1, np.int64)
    k = 0
    for i in range(n):
        for j in range(steps):
            rows[k], subject[k], position[k] = i * steps + j, i, j
            k += keep[i, j]
    return rows[:m], subject[:m], position[:m]


def kept_rows(keep: np.ndarray, compiled: bool | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flat index, subject, position) of the True cells of an (n_subjects, n_steps) mask, in row
    order.  ``compiled``: whether to use the compiled pass (default: see :data:`COMPILED_MIN_ROWS`)."""
    mask = np.ascontiguousarray(keep, dtype=bool)
    if compiled is None:
        compiled = compiled_pays(mask.size, COMPILED_MIN_ROWS, _kept_rows)
    if compiled:
        return _kept_rows(mask)
    rows = np.flatnonzero(mask.reshape(-1))
    subject, position = np.divmod(rows, mask.shape[1])
    return rows, subject, position


@njit(cache=True)
def _kept_counts(keep: np.ndarray) -> np.ndarray:  # pragma: no cover - numba
    n, steps = keep.shape
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        m = 0
        for j in range(steps):
            m += keep[i, j]
        out[i] = m
    return out


def kept_counts(keep: np.ndarray, compiled: bool | None = None) -> np.ndarray:
    """How many True cells each row of an (n_subjects, n_steps) mask has, as int64 (numpy's
    row sum of a boolean mask reduces it through a cast per cell).  ``compiled``: whether to use
    the compiled pass (default: see :data:`COMPILED_MIN_ROWS`)."""
    mask = np.ascontiguousarray(keep, dtype=bool)
    if mask.ndim != 2:
        raise ValueError(f"kept_counts needs an (n, m) mask, got shape {mask.shape}")
    if compiled is None:
        compiled = compiled_pays(mask.size, COMPILED_MIN_ROWS, _kept_counts)
    return _kept_counts(mask) if compiled else mask.sum(axis=1, dtype=np.int64)


@intrinsic
def _load_like(typingctx: Any, address: Any, like: Any) -> Any:
    """The value of ``like``'s dtype stored at address ``address`` (an element of another array of that
    dtype, read without a view of it)."""
    dtype = like.dtype
    sig = dtype(types.intp, like)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        model = context.data_model_manager[dtype]
        pointer = builder.inttoptr(args[0], model.get_data_type().as_pointer())
        return model.load_from_data_pointer(builder, pointer)

    return sig, codegen


@njit(cache=True)
def _spread(addresses: np.ndarray, strides: np.ndarray, lengths: np.ndarray, total: int, width: int,
            out: np.ndarray) -> None:  # pragma: no cover - numba
    """Rows ``c·total …`` of ``out``: ``lengths[i]`` copies of value i of column c (the array of ``out``'s
    dtype at ``addresses[c]``, ``strides[c]`` bytes from one value to the next) for every subject i in
    turn (``width``: unused, the signature of :func:`_spread_fixed`).  Every column at once, each
    subject's block of rows a run of one value, written by unsigned offsets (no view per column, no
    negative-index wrap in the store loop)."""
    k = addresses.shape[0]
    row = np.uint64(0)
    for i in range(lengths.shape[0]):
        length, at = np.uint64(lengths[i]), row
        for c in range(k):
            v = _load_like(addresses[c] + i * strides[c], out)
            for j in range(length):
                out[at + j] = v
            at += np.uint64(total)
        row += length


@njit(cache=True)
def _spread_fixed(addresses: np.ndarray, strides: np.ndarray, lengths: np.ndarray, total: int, width: int,
                  out: np.ndarray) -> None:  # pragma: no cover - numba
    """:func:`_spread` writing ``width`` (≥ every length) copies per subject and column, then moving on by
    the subject's length: the next subject's rows overwrite the surplus (column c starts at row
    c·(total + width), with ``width`` rows to spare at its end).  A loop of the same trip count for every
    subject (no mispredicted exit where lengths vary)."""
    k = addresses.shape[0]
    stride, copies = np.uint64(total + width), np.uint64(width)
    row = np.uint64(0)
    for i in range(lengths.shape[0]):
        at = row
        for c in range(k):
            v = _load_like(addresses[c] + i * strides[c], out)
            for j in range(copies):
                out[at + j] = v
            at += stride
        row += np.uint64(lengths[i])


#: Most bytes one :func:`spread` block allocates: below the heap's mmap threshold
#: (:data:`cogtestbed.heap.MMAP_THRESHOLD`, 32 MiB), so that the block comes from the warm heap, not as fresh
#: pages; as close to it as leaves the allocator room, since every block is one more pass over the subjects
#: (horizon's seven float columns of 400,000 rows: one pass instead of two, 0.7 ns a row less).
SPREAD_BLOCK_BYTES = 30 * 2**20
#: :func:`spread` writes a fixed number of copies (the longest length) per subject while that writes at
#: most this many times the rows it keeps (lengths that vary little, e.g. 5 or 10 trials a game).
FIXED_WIDTH_SLACK = 2


def spread(values: np.ndarray | Sequence[np.ndarray], lengths: np.ndarray,
           compiled: bool | None = None, sizes: tuple[int, int] | None = None) -> list[np.ndarray]:
    """Per-subject values repeated over each subject's rows, several columns in one pass: ``values``
    (k columns of n_subjects: a (k, n) array or k arrays of one dtype) → k arrays of sum(lengths)
    rows, column c's row block i ``lengths[i]`` copies of ``values[c][i]`` (``np.repeat(values[c],
    lengths)`` for every c).

    One pass writes several columns (each a row of a block of at most :data:`SPREAD_BLOCK_BYTES`),
    reading each column where it lies (no stacked copy of them), with a loop per subject rather than per
    row and column, of the same trip count for every subject where the lengths vary little
    (:data:`FIXED_WIDTH_SLACK`, :func:`_spread_fixed`).  ``compiled``: whether to use the compiled pass
    (default: see :data:`COMPILED_MIN_ROWS`; ``np.repeat`` otherwise).  ``sizes``: (sum, maximum) of
    ``lengths`` where the caller has found them and checked that no length is negative (no pass over
    the lengths here).
    """
    columns = [v if isinstance(v, np.ndarray) and v.ndim == 1 and v.strides[0] >= 0 else np.ascontiguousarray(v)
               for v in values]  # a column read in place, strided or not
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    if (lengths.ndim != 1 or any(c.shape != lengths.shape for c in columns)
            or len({c.dtype for c in columns}) > 1):
        raise ValueError(f"spread needs k columns of n values of one dtype and n lengths, got shapes "
                         f"{sorted({c.shape for c in columns})}, dtypes {sorted({str(c.dtype) for c in columns})} "
                         f"and lengths of shape {lengths.shape}")
    if sizes is None:
        if (lengths < 0).any():
            raise ValueError("spread lengths must be non-negative")
        sizes = (int(lengths.sum()), int(lengths.max(initial=0)))
    total, width = sizes
    fixed = width * len(lengths) <= FIXED_WIDTH_SLACK * total
    kernel = _spread_fixed if fixed else _spread
    if compiled is None:
        compiled = compiled_pays(total * len(columns), COMPILED_MIN_ROWS, kernel)
    if not compiled or not columns:
        return [np.repeat(c, lengths) for c in columns]
    stride = total + width if fixed else total
    per_block = max(1, SPREAD_BLOCK_BYTES // max(1, stride * columns[0].itemsize))
    out: list[np.ndarray] = []
    for first in range(0, len(columns), per_block):
        block = columns[first:first + per_block]
        rows = np.empty(len(block) * stride, dtype=block[0].dtype)
        kernel(np.array([c.ctypes.data for c in block], dtype=np.intp),
               np.array([c.strides[0] for c in block], dtype=np.intp), lengths, total, width, rows)
        out.extend(rows.reshape(len(block), stride)[:, :total])
    return out
