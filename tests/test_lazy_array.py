"""The one lazy array: OUTER keys mapped onto chunk grids equal numpy indexing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from xarray_tensogram.array import read_outer
from xarray_tensogram.array_spec import ArraySpec, MissingChunk, stack_specs


class SliceReader:
    """Serves chunks of an in-memory array and records which chunks and regions were read."""

    def __init__(self, array: np.ndarray, chunks: tuple[int, ...]) -> None:
        self.array, self.chunks, self.calls = array, chunks, []

    def read_chunk(self, coords, region):
        self.calls.append((coords, region))
        sel = tuple(slice(c * k + r.start, c * k + r.stop) for c, k, r in zip(coords, self.chunks, region, strict=True))
        return self.array[sel].copy()


def _axis_key(draw, size):
    kind = draw(st.sampled_from(["int", "slice", "array"] if size else ["slice", "array"]))
    if kind == "int":
        return draw(st.integers(-size, size - 1))
    if kind == "slice":
        bound = st.one_of(st.none(), st.integers(-size - 2, size + 2))
        return slice(draw(bound), draw(bound), draw(st.sampled_from([None, 1, 2, 3, -1, -2])))
    if size == 0:
        return np.array([], dtype=np.int64)
    return np.array(draw(st.lists(st.integers(-size, size - 1), max_size=6)), dtype=np.int64)


@st.composite
def cases(draw):
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(0, 7), min_size=ndim, max_size=ndim)))
    chunks = tuple(draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim)))
    key = tuple(_axis_key(draw, s) for s in shape)
    return shape, chunks, key


def _numpy_outer(a: np.ndarray, key: tuple) -> np.ndarray:
    for axis in reversed(range(len(key))):
        k = key[axis]
        a = np.take(a, k, axis=axis) if isinstance(k, np.ndarray) else a[(slice(None),) * axis + (k,)]
    return a


@settings(max_examples=400, deadline=None)
@given(cases())
def test_outer_keys_equal_numpy(case):
    shape, chunks, key = case
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    spec = ArraySpec(shape, a.dtype, chunks, SliceReader(a, chunks))
    expected = _numpy_outer(a, key)
    got = read_outer(spec, key)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_only_touched_chunks_and_regions_are_read():
    a = np.arange(100 * 10, dtype=np.int32).reshape(100, 10)
    reader = SliceReader(a, (25, 10))
    spec = ArraySpec(a.shape, a.dtype, (25, 10), reader)
    out = read_outer(spec, (slice(30, 33), slice(None)))
    np.testing.assert_array_equal(out, a[30:33])
    assert reader.calls == [((1, 0), (slice(5, 8), slice(0, 10)))]


def test_stacked_members_and_holes():
    parts = [np.full((2, 3), i, dtype=np.float32) for i in range(3)]
    members = [ArraySpec((2, 3), np.float32, (2, 3), SliceReader(p, (2, 3))) for p in parts]
    members[1] = None
    spec = stack_specs((3,), members, fill_value=np.nan)
    out = read_outer(spec, (slice(None), slice(None), slice(None)))
    np.testing.assert_array_equal(out[0], parts[0])
    assert np.isnan(out[1]).all()
    np.testing.assert_array_equal(out[2], parts[2])


def test_members_given_lazily_are_built_only_when_read():
    """An open of an archive stacks 400,000 lazy members: stacking them with a template builds none."""
    parts = [np.full((2, 3), i, dtype=np.float32) for i in range(3)]
    built: list[int] = []
    made: list[int] = []

    def member(i: int):
        def build() -> ArraySpec:
            built.append(i)
            return ArraySpec((2, 3), np.float32, (2, 3), SliceReader(parts[i], (2, 3)))

        return build

    class Packed(dict):
        """Members packed as ints and made into callables on access, as an open packs objects of messages."""

        def get(self, flat, default=None):
            value = dict.get(self, flat, default)
            if type(value) is int:
                made.append(flat)
                return member(value)
            return value

        def __getitem__(self, flat):
            return self.get(flat)

        def values(self):
            return [self[k] for k in self]

    template = ArraySpec((2, 3), np.float32, (2, 3), SliceReader(parts[0], (2, 3)))
    spec = stack_specs((3,), Packed({0: 0, 2: 2}), fill_value=np.nan, template=template)
    assert built == [] and made == []  # nothing made per member while stacking
    out = read_outer(spec, (slice(2, 3), slice(None), slice(None)))
    assert built == [2]
    np.testing.assert_array_equal(out[0], parts[2])
    with pytest.raises(ValueError, match="empty"):
        stack_specs((3,), {}, template=template)


def test_missing_chunk_without_fill_value_uses_nan_for_floats():
    class Holes:
        def read_chunk(self, coords, region):
            raise MissingChunk(coords)

    spec = ArraySpec((4,), np.float64, (2,), Holes())
    assert np.isnan(read_outer(spec, (slice(None),))).all()


def test_out_of_bounds_array_index_raises():
    a = np.zeros(5)
    spec = ArraySpec((5,), a.dtype, (2,), SliceReader(a, (2,)))
    with pytest.raises(IndexError):
        read_outer(spec, (np.array([7]),))


@st.composite
def basic_cases(draw):
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(1, 7), min_size=ndim, max_size=ndim)))
    chunks = tuple(draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim)))
    key = []
    for size in shape:
        if draw(st.booleans()):
            key.append(draw(st.integers(-size, size - 1)))
        else:
            bound = st.one_of(st.none(), st.integers(-size - 2, size + 2))
            key.append(slice(draw(bound), draw(bound), draw(st.sampled_from([None, 1, 2, -1, -3]))))
    return shape, chunks, tuple(key)


@settings(max_examples=300, deadline=None)
@given(basic_cases())
def test_lazy_array_basic_keys_equal_numpy(case):
    # xarray hands BASIC keys (a Dask task's chunk, a whole load) straight to the indexer: numpy is the oracle
    from xarray.core import indexing

    from xarray_tensogram.array import LazyChunkedArray

    shape, chunks, key = case
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    lazy = LazyChunkedArray(ArraySpec(shape, a.dtype, chunks, SliceReader(a, chunks)))
    got = lazy[indexing.BasicIndexer(key)]
    np.testing.assert_array_equal(got, a[key])
    assert got.shape == a[key].shape and got.dtype == a.dtype


# -- async loading: ``async_getitem`` gives what ``__getitem__`` gives, its chunk reads run at once -----------
def _lazy(shape, chunks, reader=None):
    from xarray_tensogram.array import LazyChunkedArray

    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    return a, LazyChunkedArray(ArraySpec(shape, a.dtype, chunks, reader or SliceReader(a, chunks)))


@settings(max_examples=300, deadline=None)
@given(basic_cases())
def test_async_basic_keys_equal_numpy(case):
    import asyncio

    from xarray.core import indexing

    shape, chunks, key = case
    a, lazy = _lazy(shape, chunks)
    got = asyncio.run(lazy.async_getitem(indexing.BasicIndexer(key)))
    assert got.shape == a[key].shape and got.dtype == a.dtype
    np.testing.assert_array_equal(got, a[key])


@settings(max_examples=300, deadline=None)
@given(cases())
def test_async_outer_keys_equal_numpy(case):
    import asyncio

    from xarray.core import indexing

    shape, chunks, key = case
    # xarray's own key decomposition fails on a reversed slice that selects nothing (it never makes such keys)
    reversed_empty = [
        isinstance(k, slice) and (k.step or 1) < 0 and not range(*k.indices(n)) for k, n in zip(key, shape, strict=True)
    ]
    assume(not any(reversed_empty))
    a, lazy = _lazy(shape, chunks)
    expected = _numpy_outer(a, key)
    got = asyncio.run(lazy.async_getitem(indexing.OuterIndexer(key)))
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_async_vectorized_key_equals_numpy():
    import asyncio

    from xarray.core import indexing

    a, lazy = _lazy((9, 8, 3), (2, 3, 3))
    rows, cols = np.array([[0, 8], [4, 4]]), np.array([[7, 0], [3, 1]])
    got = asyncio.run(lazy.async_getitem(indexing.VectorizedIndexer((rows, cols, slice(None)))))
    np.testing.assert_array_equal(got, a[rows, cols])


class _Meeting(SliceReader):
    """A reader whose every chunk read waits at ``barrier`` for the others."""

    def __init__(self, array, chunks, barrier):
        super().__init__(array, chunks)
        self.barrier = barrier

    def read_chunk(self, coords, region):
        self.barrier.wait()
        return super().read_chunk(coords, region)


def test_async_chunk_reads_of_one_selection_run_at_once():
    """Four chunks along the first axis, each read waiting at a barrier for the three others: read one after
    another (as the synchronous path reads them, the control below) they break the barrier instead."""
    import asyncio
    import threading

    from xarray.core import indexing

    a = np.arange(8 * 5, dtype=np.float32).reshape(8, 5)
    whole = indexing.BasicIndexer((slice(None), slice(None)))
    _, lazy = _lazy(a.shape, (2, 5), _Meeting(a, (2, 5), threading.Barrier(4, timeout=30)))
    np.testing.assert_array_equal(asyncio.run(lazy.async_getitem(whole)), a)
    _, control = _lazy(a.shape, (2, 5), _Meeting(a, (2, 5), threading.Barrier(2, timeout=0.2)))
    with pytest.raises(threading.BrokenBarrierError):
        control[whole]
