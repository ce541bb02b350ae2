"""Rows bench/bench_serve.py wrote, read back (components/catalog/bench_results.py): a row that is not in the
shape of a measurement names the table whose columns it must have."""
import json

import pytest

from components.catalog.bench_results import from_bench_results


def test_a_row_with_unknown_fields_names_the_columns_it_must_have(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps([{"id": "x", "tpot": 1.0}]))
    with pytest.raises(ValueError) as e:
        from_bench_results(path)
    assert str(e.value).startswith(f"{path}: row 0 (x): unknown field(s) tpot; missing field(s) ")
    assert str(e.value).endswith(" (bench/bench_serve.py writes rows with the columns of "
                                 "components/catalog/data/measurements/published.csv, the fields of "
                                 "components/catalog/measurements.py Measurement)")
