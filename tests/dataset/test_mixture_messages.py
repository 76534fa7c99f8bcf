"""The one-line messages of mixture files (lerobot_tools/dataset/mixture.py), each held whole: a revision that is
not a branch, tag or SHA, a JSON entry whose ``root`` holds a NUL, mixture-level ``weights`` of the wrong shape, and
a mixture file that cannot be read."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from lerobot_tools.dataset import mixture
from lerobot_tools.errors import UsageError


@pytest.mark.parametrize("revision, reason", [
    ("v 1", "space, control character or one of ~^:?*[\\"), ("a~1", "space, control character or one of ~^:?*[\\"),
    (".hidden", "a component starts with '.' or ends with '.lock'"),
    ("a/b.lock", "a component starts with '.' or ends with '.lock'"),
    ("main", None), ("refs/pr/1", None), ("a" * 40, None),
])
def test_revision_reasons(revision, reason):
    assert mixture.revision_reason(revision) == reason


def test_json_entry_whose_root_holds_a_nul_is_an_entry_error(tmp_path):
    mix = tmp_path / "m.json"
    mix.write_text(json.dumps({"datasets": [{"root": "a\x00b"}]}))
    (entry,) = mixture.read_mixture(mix)
    assert entry.error == "root contains a NUL character" and entry.root is None


@pytest.mark.parametrize("weights, got", [([1.0], "1"), ([1, 2, 3], "3"), ({"a": 1}, "dict"), ("1,2", "str")])
def test_weights_that_are_not_one_per_dataset(tmp_path, weights, got):
    mix = tmp_path / "m.json"
    mix.write_text(json.dumps({"dataset_mixture": {"datasets": [{"repo_id": "org/a"}, {"repo_id": "org/b"}],
                                                   "weights": weights}}))
    with pytest.raises(UsageError) as exc:
        mixture.read_mixture_spec(mix)
    assert str(exc.value) == f"{mix}: dataset_mixture.weights must be a list with one weight per dataset (2), got {got}"


def test_weights_one_per_dataset_are_read(tmp_path):
    mix = tmp_path / "m.json"
    mix.write_text(json.dumps({"datasets": [{"repo_id": "org/a"}, {"repo_id": "org/b"}], "weights": [1, 3]}))
    spec = mixture.read_mixture_spec(mix)
    assert [e.weight for e in spec.entries] == [1.0, 3.0] and spec.weighted


def test_a_mixture_file_that_cannot_be_read_is_named(as_nobody):
    base = Path(tempfile.mkdtemp())
    try:
        os.chmod(base, 0o755)
        mix = base / "m.txt"
        mix.write_text("org/a\n")
        os.chmod(mix, 0o000)
        with as_nobody():
            with pytest.raises(UsageError) as exc:
                mixture.read_mixture_spec(mix)
        assert exc.value.path == str(mix)
        assert exc.value.message == "mixture file cannot be read (Permission denied)"
    finally:
        shutil.rmtree(base)
