"""Where data live: the repository's shipped samples and the optional `../shared/data` folder."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DATA = REPO_ROOT / "sample_data"


def shared_data_dir() -> Path:
    """The shared real-data folder: $DISTVIZ_DATA if set, else `../shared/data` beside the repository."""
    env = os.environ.get("DISTVIZ_DATA")
    if env:
        return Path(env)
    return (REPO_ROOT.parent / "shared" / "data").resolve()


def shared_data_path(*parts: str) -> Path | None:
    """Path of a file or folder under the shared data folder, or None when it is absent."""
    p = shared_data_dir().joinpath(*parts)
    return p if p.exists() else None
