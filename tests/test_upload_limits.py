"""Upload limits: columns, header and value length refused before pandas; the worker's CPU limit, deadline and cancel."""

import time

import numpy as np
import pytest

from distviz.data import parse_worker
from distviz.data.tables import count_fields, header_line, longest_cell
from distviz.errors import DataError
from distviz.ui import uploads


@pytest.fixture(autouse=True)
def _fresh_cache():
    uploads.clear_cache()
    yield
    uploads.clear_cache()


def _one_sentence(msg: str) -> None:
    assert "\n" not in msg and "Error" not in msg and msg.count(". ") == 0 and msg.endswith(".")


def test_a_100000_column_file_is_refused_in_one_sentence_without_pandas():
    wide = (",".join(f"c{i}" for i in range(100_000)) + "\n"
            + "\n".join(",".join(["1"] * 100_000) for _ in range(10)) + "\n").encode()
    started = parse_worker.started[0]
    t0 = time.process_time()
    with pytest.raises(DataError, match="^The uploaded file has 100000 columns; this server reads at most 200") as exc:
        uploads.lab_table(wide)
    cpu = time.process_time() - t0
    assert cpu < 2.0, f"the refusal took {cpu:.2f} CPU-s"
    assert parse_worker.started[0] == started          # no worker, no pandas
    _one_sentence(str(exc.value))


def test_drifter_uploads_have_their_own_column_cap():
    data = (",".join(f"c{i}" for i in range(uploads.MAX_DRIFTER_COLUMNS + 1)) + "\n").encode() * 3
    with pytest.raises(DataError, match=f"drifter file has {uploads.MAX_DRIFTER_COLUMNS + 1} columns"):
        uploads.drifter_table(data)


def test_a_long_header_row_and_a_long_value_are_refused():
    names = [f"{'n' * 900}{i}" for i in range(20)]                       # each name < MAX_CELL_CHARS
    long_header = (",".join(names) + "\n" + ("1," * 19 + "1\n") * 12).encode()
    with pytest.raises(DataError, match="^The header row of the uploaded file is 18[0-9]+ characters long") as exc:
        uploads.lab_table(long_header)
    _one_sentence(str(exc.value))
    rows = [f"{i},{i % 3}" for i in range(12)]
    rows[5] = "5," + "7" * 5000
    long_value = ("x,y\n" + "\n".join(rows) + "\n").encode()
    with pytest.raises(DataError, match="^The uploaded file holds a value of 5000 characters on line 7") as exc:
        uploads.lab_table(long_value)
    _one_sentence(str(exc.value))


def test_the_layout_helpers_honour_quotes_blank_lines_and_chunk_edges():
    assert count_fields('"a,b",c,"d ""e"", f"', ",") == 3
    assert header_line("\n \r\n  x;y\r\n1;2") == "  x;y"
    rng = np.random.default_rng(1)
    for _ in range(30):
        text = "".join(rng.choice(list("ab,\n\ré"), size=int(rng.integers(0, 60)), p=[.3, .3, .2, .1, .05, .05]))
        runs = [len(r) for r in text.replace("\r", "\n").replace(",", "\n").split("\n")]
        n, end = longest_cell(text, ",", chunk=7)
        assert n == max(runs)
        assert end - n >= 0 and "," not in text[end - n:end] and "\n" not in text[end - n:end]


class Rerun(Exception):
    """Stands in for Streamlit's rerun and stop exceptions."""


def _rerun():
    raise Rerun()


def test_a_rerun_while_the_worker_starts_leaves_it_starting_for_the_next_file():
    parse_worker.shutdown()
    with pytest.raises(Rerun):
        parse_worker.parse("lab", b"", {}, cpu_s=60, wall_s=60, wait=_rerun)
    worker, started = parse_worker._idle[-1], parse_worker.started[0]
    assert not worker.ready and worker.proc.poll() is None
    assert uploads.lab_table(b"a,b\n" + b"1,2\n" * 12).shape == (12, 2)
    assert parse_worker._idle == [worker] and parse_worker.started[0] == started


def test_a_parse_past_its_cpu_budget_is_stopped_with_one_sentence():
    t0 = time.monotonic()
    with pytest.raises(DataError, match="took more than 0.3 CPU seconds to read") as exc:
        parse_worker.parse("spin", b"", {"seconds": 30.0}, cpu_s=0.3, wall_s=60, what="The uploaded file")
    assert time.monotonic() - t0 < 30
    assert not isinstance(exc.value, parse_worker.ParseUnavailable)    # a sentence about the file: cached
    _one_sentence(str(exc.value))


def test_a_cancelled_or_overdue_parse_is_stopped_and_the_worker_reads_the_next_file():
    calls = []

    def wait():
        calls.append(1)
        if len(calls) > 3:
            raise Rerun()

    uploads.lab_table(b"a,b\n" + b"1,2\n" * 12)          # a worker is up and idle
    worker, started = parse_worker._idle[-1], parse_worker.started[0]
    t0 = time.monotonic()
    with pytest.raises(Rerun):                           # a rerun of the page: its spinning child is killed
        parse_worker.parse("spin", b"", {"seconds": 30.0}, cpu_s=60, wall_s=60, wait=wait)
    with pytest.raises(parse_worker.ParseUnavailable, match="within 0.3 seconds because the server is busy"):
        parse_worker.parse("spin", b"", {"seconds": 30.0}, cpu_s=60, wall_s=0.3)
    assert time.monotonic() - t0 < 20 and len(calls) == 4
    df = uploads.lab_table(b"a,b\n" + b"5,6\n" * 12)   # the same worker (it reaped both children) reads it
    assert df.shape == (12, 2) and parse_worker.started[0] == started and parse_worker._idle == [worker]


def test_a_busy_servers_sentence_is_not_cached(monkeypatch):
    data = b"a,b\n" + b"3,4\n" * 12
    real = parse_worker.parse

    def busy(*args, **kwargs):
        raise parse_worker.ParseUnavailable("The uploaded file could not be read within 0 seconds because the server "
                                            "is busy; upload it again in a minute.")

    monkeypatch.setattr(parse_worker, "parse", busy)
    with pytest.raises(parse_worker.ParseUnavailable):
        uploads.lab_table(data)
    monkeypatch.setattr(parse_worker, "parse", real)
    assert uploads.lab_table(data).shape == (12, 2)
