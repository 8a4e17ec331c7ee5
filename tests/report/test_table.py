"""The per-record table: what scores.csv and scores.parquet hold, read back by pandas, written without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from miaudit.report.table import ScoresTable


@pytest.fixture()
def table() -> ScoresTable:
    return ScoresTable(
        {
            "risk_rank": np.array([1, 2, 3]),
            "record": np.array([40, 7, 12]),
            "set": np.array(["members", "nonmembers", "a,b"]),
            "flag": np.array([True, False, True]),
            "lira_n4.score": np.array([2.5, np.nan, 0.1 + 0.2]),
        }
    )


def test_files_read_back_as_written(table: ScoresTable, tmp_path: Path) -> None:
    table.write_csv(tmp_path / "s.csv")
    table.write_parquet(tmp_path / "s.parquet")
    header, *lines = (tmp_path / "s.csv").read_text().splitlines()
    assert header == "risk_rank,record,set,flag,lira_n4.score"  # names unquoted
    assert lines[1].endswith(",")  # NaN: an empty field, as pandas writes it
    for frame in (pd.read_csv(tmp_path / "s.csv"), pd.read_parquet(tmp_path / "s.parquet")):
        assert frame["record"].tolist() == [40, 7, 12]
        assert frame["set"].tolist() == ["members", "nonmembers", "a,b"]
        assert frame["flag"].tolist() == [True, False, True]
        assert frame["lira_n4.score"].iloc[2] == 0.1 + 0.2  # floats exact, not rounded to 8 digits
        assert np.isnan(frame["lira_n4.score"].iloc[1])
    assert pd.read_parquet(tmp_path / "s.parquet")["lira_n4.score"].isna().sum() == 1


def test_head_sort_rows_and_pandas(table: ScoresTable) -> None:
    assert table.head(2)["record"].tolist() == [40, 7]
    ranked = table.sorted_by("lira_n4.score", descending=True)
    assert ranked["record"].tolist() == [40, 12, 7]  # NaN last
    assert table.rows(["record", "set"])[2] == {"record": 12, "set": "a,b"}
    assert list(table.to_pandas().columns) == table.columns and len(table) == 3
    with pytest.raises(ValueError, match="different lengths"):
        ScoresTable({"a": np.arange(2), "b": np.arange(3)})


@pytest.mark.slow
def test_writing_imports_no_pandas(tmp_path: Path) -> None:
    """pyarrow asks pandas about its arguments when given arrays (importing it); the table avoids that."""
    code = (
        "import sys, numpy as np\nfrom miaudit.report.table import ScoresTable\n"
        "t = ScoresTable({'a': np.array([1.0, np.nan]), 's': np.array(['x', 'y'])})\n"
        f"t.write_csv({str(tmp_path / 'a.csv')!r}); t.write_parquet({str(tmp_path / 'a.parquet')!r})\n"
        "print('pandas' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-1000:]
    assert done.stdout.strip() == "False"
