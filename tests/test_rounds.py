"""The round rules every boosting loop shares (distviz.boosting.rounds): early stopping with tol, the start and
non-finite checks, and the two line-search rules on a loss function."""

from __future__ import annotations

import numpy as np

from distviz.boosting.rounds import EarlyStopping, RoundBook, line_search, ngboost_scale


def test_early_stopping_counts_only_improvements_beyond_tol():
    es = EarlyStopping(rounds=2, tol=0.1)
    es.start({"nll": 1.0})
    assert es.update(1, {"nll": 0.95}) == ""            # better, but by less than tol: no new best
    assert es.update(2, {"nll": 0.92}).startswith("early stopping: no better validation NLL for 2 rounds")
    assert es.best_rounds() == {"nll": 0}
    es = EarlyStopping(rounds=2, tol=0.0)
    es.start({"nll": 1.0})
    assert es.update(1, {"nll": 0.95}) == "" and es.update(2, {"nll": np.nan}) == ""
    assert es.update(3, {"nll": 0.99}) != "" and es.best_rounds() == {"nll": 1}


def test_round_book_start_fault_and_stop_rules():
    book = RoundBook(np.zeros(1), 5, EarlyStopping())
    assert not book.start(np.inf)
    assert book.res.stop_reason.startswith("the NLL of the constant start is not finite")
    book = RoundBook(np.zeros(1), 5, EarlyStopping(rounds=1))
    assert book.start(1.0, 0, 2.0)
    assert book.targets_failed(1, 10, 10, 0.1) and "every row's pseudo-response" in book.res.stop_reason
    assert not book.round_failed(1, 0.9, 1.9)
    assert book.round_failed(1, 0.9, np.nan) and "validation NLL non-finite" in book.res.stop_reason
    book.res.stop_reason = ""
    book.add("round 1", 0.9, 1.9, 0, 0, np.nan, 1.0, 0.0)
    assert not book.stop(1)
    book.add("round 2", 0.8, 1.95, 0, 0, np.nan, 1.0, 0.0)
    assert book.stop(2) and book.res.stop_reason.startswith("early stopping")
    res = book.finish(F_train=None)
    assert res.best_iteration == 1 and res.best_rounds == {"nll": 1} and res.valid_loss == [2.0, 1.9, 1.95]


def test_line_search_rules():
    def loss(s):   # least at s = 4
        return (np.log2(s) - 2.0) ** 2

    assert line_search("grow", loss, 4.5) == 4.0
    assert line_search("grow", lambda s: 1.0 + s, 0.5) == 0.0          # no step helps: 0 (the round is dropped)
    assert line_search("ngboost", loss, 4.5, norm=1.0) == ngboost_scale(loss, 1.0, 4.5, 1e-4) == 16.0   # up while <= 4.5
    asked = []
    line_search("ngboost", lambda s: asked.append(s) or np.nan, 1.0, norm=1.0)
    assert len(asked) == len(set(asked))   # each scale is evaluated once
