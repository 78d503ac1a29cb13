"""Hostile paths in every file option (issue 27, item 6): traversal, absolute names, symbolic links out of a
folder, symbolic-link loops, FIFOs, devices, folders and huge files.

The policy (distviz/data/paths.py): a folder option ($DISTVIZ_DATA, $DISTVIZ_LESSONS, a study's --root) is
resolved, and a name inside it is opened only when it resolves inside it; a file option (--data) must be a
regular file of bounded size, checked from its stat before anything opens it.  Every refusal is one
sentence; nothing blocks on a FIFO (each call runs under a watchdog).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from distviz.data import paths
from distviz.data.paths import read_bounded, regular_file, safe_child
from distviz.errors import ConfigError, DataError

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and symbolic links need a POSIX system")


def _no_hang(fn, *args, timeout=10.0, **kw):
    """fn(*args, **kw) in a thread: its result or exception, or a test failure when it has not returned in `timeout` s."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn(*args, **kw)
        except BaseException as exc:  # noqa: BLE001 (handed back to the test)
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        pytest.fail(f"{getattr(fn, '__name__', fn)} blocked (a FIFO was opened)")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _one_sentence(msg: str) -> None:
    assert msg and "\n" not in msg and len(msg) < 400 and msg.rstrip().endswith("."), msg


@pytest.fixture()
def hostile(tmp_path):
    """A folder `data` holding a good file, a link out, a link inside, a loop, a FIFO and a sub-folder; `outside` a secret."""
    d = tmp_path / "data"
    d.mkdir()
    outside = tmp_path / "secret.txt"
    outside.write_text("secret\n")
    (d / "good.txt").write_text("1 2 3\n")
    (d / "out.txt").symlink_to(outside)
    (d / "in.txt").symlink_to(d / "good.txt")
    (d / "loop.txt").symlink_to(d / "loop.txt")
    os.mkfifo(d / "fifo.txt")
    (d / "sub").mkdir()
    return d


def test_safe_child_keeps_names_inside_the_folder(hostile):
    assert safe_child(hostile, "good.txt") == (hostile / "good.txt").resolve()
    assert safe_child(hostile, "in.txt") == (hostile / "good.txt").resolve()   # a link inside the folder is fine
    assert safe_child(hostile, "missing.txt").name == "missing.txt"            # absence is the caller's check
    for name, match in (("../secret.txt", "plain name"), ("../../etc/passwd", "plain name"),
                        ("sub/../../secret.txt", "plain name"), ("/etc/passwd", "plain name"), ("", "plain name"),
                        ("a\x00b", "plain name"), ("out.txt", "resolves outside"), ("loop.txt", "symbolic-link loop")):
        with pytest.raises(DataError, match=match) as e:
            safe_child(hostile, name)
        _one_sentence(str(e.value))
        assert str(hostile.parent) not in str(e.value)   # the sentence names the folder, not the server path
    (hostile / "sub" / "up").symlink_to(hostile.parent)   # a folder link out, then a plain name below it
    with pytest.raises(DataError, match="resolves outside"):
        safe_child(hostile, "sub", "up", "secret.txt")


def test_regular_file_refuses_fifos_devices_folders_loops_and_huge_files(hostile, tmp_path):
    assert regular_file(hostile / "good.txt") == hostile / "good.txt"
    for p, match in ((hostile / "fifo.txt", "a FIFO"), (Path("/dev/null"), "a device"), (hostile / "sub", "a folder"),
                     (hostile / "loop.txt", "symbolic-link loop"), (hostile / "none.csv", "does not exist")):
        with pytest.raises(DataError, match=match) as e:
            _no_hang(regular_file, p)
        _one_sentence(str(e.value))
    huge = tmp_path / "huge.csv"
    with open(huge, "wb") as f:   # sparse: the size is what the check reads, nothing is written
        f.truncate(paths.MAX_DATA_FILE_BYTES + 1)
    with pytest.raises(DataError, match="more than the 2 GiB") as e:
        regular_file(huge)
    _one_sentence(str(e.value))
    assert regular_file(huge, max_bytes=None) == huge   # a streaming reader (the GDP archive) sets no cap


def test_read_bounded_does_not_block_on_a_fifo_and_caps_the_size(hostile, tmp_path):
    assert read_bounded(hostile / "good.txt", 100) == b"1 2 3\n"
    with pytest.raises(DataError, match="a FIFO"):
        _no_hang(read_bounded, hostile / "fifo.txt", 100)
    with pytest.raises(DataError, match="a device"):
        _no_hang(read_bounded, "/dev/zero", 100)
    with pytest.raises(DataError, match="more than"):
        read_bounded(hostile / "good.txt", 3)
    with pytest.raises(DataError, match="could not be read"):
        read_bounded(hostile / "loop.txt", 100)


LESSON = 'title = "{t}"\n[[step]]\ntitle = "s"\ntext = "t"\nquestion = "q"\npage = "lab"\n'


def test_lesson_folder_reads_only_its_own_regular_files(tmp_path, monkeypatch):
    from distviz.ui import lessons

    d = tmp_path / "lessons"
    d.mkdir()
    secret = tmp_path / "secret.toml"
    secret.write_text(LESSON.format(t="Secret"))
    (d / "a_good.toml").write_text(LESSON.format(t="Good"))
    (d / "b_link_out.toml").symlink_to(secret)
    (d / "c_loop.toml").symlink_to(d / "c_loop.toml")
    os.mkfifo(d / "d_fifo.toml")
    (d / "e_folder.toml").mkdir()
    with open(d / "f_huge.toml", "wb") as f:
        f.truncate(lessons.MAX_FILE_BYTES + 1)
    (d / "g_link_in.toml").symlink_to(d / "a_good.toml")
    monkeypatch.setenv(lessons.ENV_DIR, str(d))
    shipped = len(lessons.load_lessons(sorted(lessons.LESSON_DIR.glob("*.toml")))[0])
    got, problems = _no_hang(lessons.load_lessons)
    extra = [le.title for le in got[shipped:]]
    assert extra == ["Good", "Good"], extra   # the file and the link to it inside the folder; never "Secret"
    assert len(problems) == 5, problems
    for p, what in zip(problems, ("resolves outside", "symbolic-link loop", "not a regular file",
                                  "not a regular file", "larger than")):
        assert what in p, (what, p)
        _one_sentence(p)
        assert str(tmp_path) not in p


def test_shared_data_folder_refuses_links_out_and_fifos(tmp_path, monkeypatch):
    from distviz.data import cde, uci

    d = tmp_path / "shared"
    (d / "cde").mkdir(parents=True)
    outside = tmp_path / "bmd.tsv"
    outside.write_text("age\tspnbmd\n10\t0.1\n")
    (d / "cde" / "bmd.tsv").symlink_to(outside)
    monkeypatch.setenv("DISTVIZ_DATA", str(d))
    assert paths.shared_data_dir() == d.resolve()
    assert not cde.bone_available()
    with pytest.raises(DataError, match="resolves outside"):
        cde.load_bone()
    (d / "cde" / "bmd.tsv").unlink()
    os.mkfifo(d / "cde" / "bmd.tsv")
    with pytest.raises(DataError, match="a FIFO"):
        _no_hang(cde.load_bone)
    # UCI: the data-set name is a plain name inside the root; its files are regular files inside its folder
    root = tmp_path / "uci"
    (root / "toy" / "data").mkdir(parents=True)
    for name in ("../../etc", "/etc", "toy/../.."):
        with pytest.raises(DataError, match="plain name"):
            uci.uci_dir(name, root)
    os.mkfifo(root / "toy" / "data" / "data.txt")
    with pytest.raises(DataError, match="a FIFO"):
        _no_hang(uci.load_uci, "toy", 0, root)
    (root / "toy" / "data" / "data.txt").unlink()
    (root / "toy" / "data" / "data.txt").symlink_to(outside)
    with pytest.raises(DataError, match="resolves outside"):
        uci.load_uci("toy", 0, root)


def test_cli_file_options_refuse_fifos_devices_and_folders(tmp_path, capsys):
    from distviz.cli import main

    os.mkfifo(tmp_path / "fifo.csv")
    (tmp_path / "folder").mkdir()
    for data, match in ((tmp_path / "fifo.csv", "a FIFO"), ("/dev/zero", "a device"), (tmp_path / "folder", "a folder"),
                        (tmp_path / "fifo.nc", "does not exist")):
        assert _no_hang(main, ["study", "drifters", "--data", str(data), "--json"]) == 2
        err = capsys.readouterr().err
        assert match in err, err
        _one_sentence(err.strip())
    assert _no_hang(main, ["study", "drifters", "--save", str(tmp_path / "folder"), "--json"]) == 2
    assert "not a regular file" in capsys.readouterr().err
    os.mkfifo(tmp_path / "fifo_archive.nc")
    assert _no_hang(main, ["data", "gdp", "--archive", str(tmp_path / "fifo_archive.nc"),
                           "--out", str(tmp_path / "out")]) == 2
    assert "a FIFO" in capsys.readouterr().err
    (tmp_path / "file.txt").write_text("x")
    assert _no_hang(main, ["data", "gdp", "--archive", str(tmp_path / "folder"), "--out", str(tmp_path / "file.txt")]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_lesson_read_errors_are_config_errors(tmp_path):
    from distviz.ui.lessons import _read_lesson

    os.mkfifo(tmp_path / "x.toml")
    with pytest.raises(ConfigError, match="not a regular file"):
        _no_hang(_read_lesson, tmp_path / "x.toml")
