"""Reads an exported lab run (`speedy lab export`) with DuckDB, from CSV and from Parquet,
prints the mean onLoad per network x variant and the objects per load, and checks that
both formats give the same numbers.

    python3 -m venv venv && venv/bin/pip install -r docs/examples/requirements.txt
    venv/bin/python docs/examples/export_duckdb.py OUT   # OUT holds loads.* and objects.*
"""

import math
import sys

import duckdb

# Per network x variant: loads, loads with an onLoad (a timed-out load's on_load_ms is
# null, and avg() leaves it out, as the lab's statistics do), mean onLoad, and objects
# per load counted two ways: the loader's count (loads.objects) and the HAR's entries
# (rows of objects joined on the load's keys).
SUMMARY = """
WITH per_load AS (
    SELECT l.network, l.variant, l.page, l.run, l.on_load_ms, l.objects,
           count(o.entry) AS har_objects
    FROM loads AS l
    LEFT JOIN objects AS o USING (experiment, network, variant, page, run)
    GROUP BY l.experiment, l.network, l.variant, l.page, l.run, l.on_load_ms, l.objects
)
SELECT network, variant,
       count(*) AS loads,
       count(on_load_ms) AS with_onload,
       avg(on_load_ms) AS mean_onload_ms,
       avg(objects) AS objects_per_load,
       avg(har_objects) AS har_objects_per_load
FROM per_load
GROUP BY network, variant
ORDER BY network, variant
"""


def literal(path):
    """A file path as an SQL string literal."""
    return "'" + path.replace("'", "''") + "'"


def summary(con, directory, fmt):
    reader = "read_csv" if fmt == "csv" else "read_parquet"
    for table in ("loads", "objects"):
        path = literal(f"{directory}/{table}.{fmt}")
        con.execute(f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM {reader}({path})")
    return con.execute(SUMMARY).fetchall()


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12)
    return a == b


def main():
    directory = sys.argv[1]
    con = duckdb.connect()
    csv = summary(con, directory, "csv")
    parquet = summary(con, directory, "parquet")

    print(f"{'network':<16} {'variant':<8} {'loads':>5} {'onLoad':>6} "
          f"{'mean onLoad ms':>14} {'objects/load':>12} {'HAR entries/load':>16}")
    for network, variant, loads, with_onload, mean, objs, har_objs in parquet:
        mean = "—" if mean is None else f"{mean:.1f}"
        print(f"{network:<16} {variant:<8} {loads:>5} {with_onload:>6} "
              f"{mean:>14} {objs:>12.1f} {har_objs:>16.1f}")

    assert len(csv) == len(parquet), (csv, parquet)
    for c, p in zip(csv, parquet):
        assert all(same(x, y) for x, y in zip(c, p)), f"csv {c} != parquet {p}"
    n_csv = con.execute(
        f"SELECT count(*) FROM read_csv({literal(directory + '/objects.csv')})").fetchone()
    n_pq = con.execute(
        f"SELECT count(*) FROM read_parquet({literal(directory + '/objects.parquet')})"
    ).fetchone()
    assert n_csv == n_pq, (n_csv, n_pq)
    print(f"CSV and Parquet agree: {len(parquet)} network x variant cells, "
          f"{n_pq[0]} objects")


if __name__ == "__main__":
    main()
