"""Dataset.forget: cached metadata dropped through the class's own API (the loaders free it after construction)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lerobot_tools.dataset.model import Dataset

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "datasets"


def test_forget_drops_cached_metadata_and_the_next_access_reads_it_again():
    ds = Dataset(FIXTURES / "clean_v21")
    first = ds.episodes
    assert ds.episodes is first  # cached
    ds.forget("episodes", "tasks")
    again = ds.episodes
    assert again is not first and [e.episode_index for e in again] == [e.episode_index for e in first]
    ds.forget("tasks")  # never read: nothing to drop, no error


@pytest.mark.parametrize("name", ["info", "root", "fps", "nosuch"])
def test_forget_refuses_what_is_not_cached_metadata(name):
    ds = Dataset(FIXTURES / "clean_v21")
    with pytest.raises(ValueError, match=name):
        ds.forget(name)
    assert ds.info and ds.root.is_dir()


def test_the_frame_loader_frees_the_episode_metadata_after_construction():
    pytest.importorskip("torch")
    from lerobot_tools.loaders import FrameDataset

    fd = FrameDataset(FIXTURES / "clean_v21")
    assert "episodes" not in vars(fd.meta) and "tasks" not in vars(fd.meta)
    assert len(fd) > 0 and fd[0]["task"]
