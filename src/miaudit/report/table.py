"""The per-record table (scores.csv, scores.parquet) as named numpy columns, written through pyarrow.

A report needs little of a data frame: columns by name, the first rows, a stable sort, and the two files.
pandas would bring half a second of imports to every report, a scores-only audit's largest fixed cost, and
its CSV writer formats each number in Python (a second for 50,000 records); pyarrow writes both files in
C++. ``to_pandas`` gives the data frame the Python API returns (``AuditResult.scores``).

CSV: a header line (column names are slugs: never quoted), strings quoted, floats in their shortest exact
form (pyarrow's), NaN and missing values as empty fields (as pandas writes them); parquet: NaN floats stored
as nulls (as pandas' ``to_parquet`` stores them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

# a value of a row as Python gives it back (``tolist``): an int, a float, a string or a bool
Cell: TypeAlias = int | float | str | bool | None


class ScoresTable:
    """Equal-length columns in order, each a 1-D numpy array."""

    def __init__(self, columns: Mapping[str, Any]):
        self._cols = {name: np.asarray(values) for name, values in columns.items()}
        lengths = {len(v) for v in self._cols.values()}
        if len(lengths) > 1:
            raise ValueError(f"ScoresTable: columns of different lengths {sorted(lengths)}")
        self._n = lengths.pop() if lengths else 0

    @property
    def columns(self) -> list[str]:
        return list(self._cols)

    def __len__(self) -> int:
        return self._n

    def __contains__(self, name: object) -> bool:
        return name in self._cols

    def __getitem__(self, name: str) -> np.ndarray:
        return self._cols[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._cols)

    def take(self, rows: np.ndarray) -> ScoresTable:
        """The rows at positions ``rows``, in that order."""
        return ScoresTable({name: values[rows] for name, values in self._cols.items()})

    def head(self, n: int) -> ScoresTable:
        return self.take(np.arange(min(n, self._n)))

    def sorted_by(self, name: str, descending: bool = False) -> ScoresTable:
        """Rows ordered by column ``name`` (stable: ties keep their order; NaN last either way)."""
        values = self._cols[name].astype(np.float64)
        return self.take(np.argsort(-values if descending else values, kind="stable"))

    def rows(self, names: Sequence[str] | None = None) -> list[dict[str, Cell]]:
        """Each row as a dict of Python values (ints, floats, strings)."""
        names = self.columns if names is None else list(names)
        lists = [self._cols[c].tolist() for c in names]
        return [dict(zip(names, values, strict=True)) for values in zip(*lists, strict=True)]

    def to_arrow(self) -> pa.Table:
        import pyarrow as pa

        return pa.table({name: _arrow_column(values) for name, values in self._cols.items()})

    def to_pandas(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self._cols)

    def write_csv(self, path: Path) -> None:
        from pyarrow import csv

        csv.write_csv(self.to_arrow(), str(path), csv.WriteOptions(quoting_header="none"))

    def write_parquet(self, path: Path) -> None:
        from pyarrow import parquet

        parquet.write_table(self.to_arrow(), str(path))

    @classmethod
    def read(cls, path: Path) -> ScoresTable:
        """scores.parquet or scores.csv read back as written: numbers as numpy arrays (a null float as NaN), text as
        strings."""
        if Path(path).suffix == ".parquet":
            from pyarrow import parquet

            table = parquet.read_table(str(path))
        else:
            from pyarrow import csv

            table = csv.read_csv(str(path))
        return cls({name: _numpy_column(table.column(name)) for name in table.column_names})


def _numpy_column(column: pa.ChunkedArray) -> np.ndarray:
    """An arrow column as numpy: floats with nulls as NaN, integers and booleans as they are, text as str."""
    import pyarrow as pa

    kind = column.type
    if pa.types.is_floating(kind) or (column.null_count and (pa.types.is_integer(kind) or pa.types.is_null(kind))):
        return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)
    if pa.types.is_integer(kind) or pa.types.is_boolean(kind):
        return np.asarray(column.to_numpy(zero_copy_only=False))
    return np.asarray([str(v) for v in column.to_pylist()], dtype=object)


def _arrow_column(values: np.ndarray) -> pa.Array:
    """A column as an arrow array, NaN as null, built from its buffers.

    Narrow workaround: ``pa.array`` asks pandas whether its argument is a pandas object, importing pandas (half
    a second) to do so; ``Array.from_buffers`` does not. Numbers and booleans keep their bytes; anything else
    becomes UTF-8 strings."""
    import pyarrow as pa

    n = len(values)
    if values.dtype.kind in "fiu":
        nan = np.isnan(values) if values.dtype.kind == "f" else np.zeros(n, dtype=bool)
        valid = pa.py_buffer(np.packbits(~nan, bitorder="little")) if nan.any() else None
        data = pa.py_buffer(np.ascontiguousarray(values))
        return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), n, [valid, data], null_count=int(nan.sum()))
    if values.dtype.kind == "b":
        return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(np.packbits(values, bitorder="little"))])
    encoded = [str(v).encode() for v in values.tolist()]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])
