"""The study command line: listing, unknown names, JSON output."""

import json

from distviz import cli
from distviz.experiments import registry


def test_unknown_study_is_a_clear_error(capsys):
    assert cli.main(["study", "no-such-study"]) == 2
    err = capsys.readouterr().err
    assert "Unknown study 'no-such-study'" in err


def test_registered_study_prints_json(capsys):
    @registry.study("_echo", options=[registry.Option("n", int, 3, "a number")])
    def _echo(n):
        return {"a": {"n": n, "x": 0.5}}

    assert cli.main(["study", "_echo", "--n", "7", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"a": {"n": 7, "x": 0.5}}
    assert cli.main(["study", "_echo"]) == 0
    assert "method" in capsys.readouterr().out


def test_warm_names_an_unknown_group_in_one_sentence(capsys):
    assert cli.main(["warm", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert "No kernel group named 'nosuch'" in err and "common, wide" in err


def test_warm_loads_or_compiles_each_named_group(capsys):
    assert cli.main(["warm", "wide"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("this machine: numba kernels compiled or loaded (wide ") and "common" not in out


def test_warm_runs_on_every_worker_of_a_cluster(capsys):
    """`--scheduler` runs the warm-up in each worker process (one line per worker address)."""
    assert cli.main(["warm", "wide", "--scheduler", "local", "--workers", "2"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and all(ln.startswith("tcp://") and "(wide " in ln for ln in lines)
