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
