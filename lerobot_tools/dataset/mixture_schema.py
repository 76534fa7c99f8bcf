"""The common sample schema of a mixture: feature names after the name mapping, dtypes and shapes.

Shared by the mixture compatibility checks (``lrtool validate MIXTURE``, family X) and
:class:`~lerobot_tools.loaders.MixtureDataset`, so what validate calls an error is exactly what the
loader refuses. No torch, no file I/O: everything comes from each dataset's ``info.json`` features.

Terms (``docs/mixtures.md``):

* **name mapping** — OpenTau's per-dataset ``data_features_name_mapping`` maps a *role* (the mixture's
  name, e.g. ``"actions"``, ``"camera0"``) to one of the dataset's features (``"action"``,
  ``"observation.images.front"``), or to ``"task"`` for the task string. After mapping, the feature is
  seen under the role's name only; features no role maps keep their own names.
* **common names** — the names every dataset provides after mapping. A batch holds exactly these (plus
  ``dataset_index`` and the task string): a name only some datasets provide is dropped, because
  ``torch.utils.data.default_collate`` takes the keys of a batch's first sample and raises ``KeyError``
  on a later sample that lacks one.
* **roles** — names any mapping defines. The mixture asks for them explicitly, so a dataset that
  provides none of them is an error, not a drop.
* **sample shape** — the shape a loader returns: ``()`` for a declared ``[1]`` scalar, the declared
  shape otherwise, ``(C, H, W)`` for cameras (``names`` say whether the declared shape is HWC or CHW).
  Stacking samples of different sample shapes raises in collate (``torch.stack``: "stack expects each
  tensor to be equal size"); numeric dtypes that differ stack silently (promoted in the main process,
  cast to the first sample's dtype in a DataLoader worker, where collate stacks into a preallocated
  shared-memory tensor).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping, Sequence

#: Mapping targets that are not declared features: OpenTau maps the task text as ``"task"``.
VIRTUAL_COLUMNS = {"task"}
CAMERA_DTYPES = ("video", "image")
NUMERIC_DTYPES = ("float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool")


@dataclass(frozen=True)
class FeatureSpec:
    """One feature as a sample carries it.

    Attributes:
        column: the dataset's own feature name (``"task"`` for the task string).
        kind: ``"numeric"``, ``"camera"``, ``"string"``, ``"task"`` or ``"other"``.
        dtype: the declared dtype (``"float32"``, ``"video"``, ``"string"``...).
        shape: the declared shape (a tuple of ints; empty when malformed or for the task).
        sample_shape: the shape of the tensor a loader returns (see module docstring); cameras ``(C, H, W)``.
    """

    column: str
    kind: str
    dtype: str
    shape: tuple[int, ...]
    sample_shape: tuple[int, ...]

    def describe(self) -> str:
        """``float32 (14,)`` / ``video 3x480x640`` / ``string``."""
        if self.kind == "camera":
            c, h, w = self.sample_shape if len(self.sample_shape) == 3 else (0, 0, 0)
            return f"{self.dtype} {c}x{h}x{w} (CxHxW)"
        if self.kind in ("string", "task"):
            return self.dtype
        return f"{self.dtype} {self.sample_shape}"


def camera_chw(ft: Mapping) -> tuple[int, int, int] | None:
    """``(C, H, W)`` of a camera feature from its declared shape and names, or None when malformed."""
    try:
        shape = [int(s) for s in ft.get("shape") or []]
    except (TypeError, ValueError):
        return None
    if len(shape) != 3:
        return None
    names = ft.get("names")
    if isinstance(names, list) and names[:1] in (["channels"], ["channel"]):
        c, h, w = shape
    else:
        h, w, c = shape
    return c, h, w


def feature_spec(column: str, ft: Mapping) -> FeatureSpec:
    """The :class:`FeatureSpec` of one ``info.json`` feature (malformed declarations give kind ``"other"``)."""
    dtype = ft.get("dtype")
    dtype = dtype if isinstance(dtype, str) else str(dtype)
    raw = ft.get("shape")
    try:
        shape = tuple(int(s) for s in raw) if isinstance(raw, (list, tuple)) else ()
    except (TypeError, ValueError):
        shape = ()
    if dtype in CAMERA_DTYPES:
        chw = camera_chw(ft)
        return FeatureSpec(column, "camera" if chw else "other", dtype, shape, chw or ())
    if dtype == "string":
        return FeatureSpec(column, "string", dtype, shape, ())
    if dtype in NUMERIC_DTYPES:
        return FeatureSpec(column, "numeric", dtype, shape, () if shape == (1,) else shape)
    return FeatureSpec(column, "other", dtype, shape, shape)


TASK_SPEC = FeatureSpec("task", "task", "string", (), ())


def mapped_features(features: Mapping[str, Mapping], mapping: Mapping[str, str] | None,
                    *, include_cameras: bool = True) -> dict[str, FeatureSpec]:
    """A dataset's features under their names after the mapping (role -> column), plus ``task``.

    Roles come first (mapping order), then the unmapped features (declaration order), then ``task``. A role
    mapped to a column the dataset does not declare is left out (validate reports it as M003). A feature a
    role maps is seen under the role only; a role named like an unmapped feature hides that feature. The
    task string is ``"task"`` unless a role maps it.
    """
    mapping = dict(mapping or {})
    out: dict[str, FeatureSpec] = {}
    for role, column in mapping.items():  # roles first, in mapping order
        if column in VIRTUAL_COLUMNS:
            out[role] = TASK_SPEC
        elif isinstance(features.get(column), Mapping):
            spec = feature_spec(column, features[column])
            if spec.kind != "camera" or include_cameras:
                out[role] = spec
    taken = set(mapping.values())
    for name, ft in features.items():
        if name in taken or name in mapping or not isinstance(ft, Mapping):
            continue
        spec = feature_spec(name, ft)
        if spec.kind == "camera" and not include_cameras:
            continue
        out[name] = spec
    if "task" not in taken and "task" not in mapping:
        out["task"] = TASK_SPEC
    return out


@dataclass
class Disagreement:
    """Datasets that disagree on one common name: each variant with the datasets (positions) holding it.

    Attributes:
        name: the common name.
        what: ``"shape"``, ``"kind"`` or ``"dtype"``.
        variants: ``{description: [dataset positions]}``, most common first.
    """

    name: str
    what: str
    variants: dict[str, list[int]]

    @property
    def majority(self) -> str:
        return next(iter(self.variants))


@dataclass
class MixtureSchema:
    """The common sample schema of a list of datasets (see module docstring).

    Attributes:
        per_dataset: each dataset's :func:`mapped_features`.
        roles: names defined by any mapping.
        common: common name -> spec (of the first dataset; numeric dtypes promoted in ``dtype_of``).
        missing: dataset position -> roles it does not provide (an error: collate would raise KeyError).
        dropped: name -> dataset positions that have it, for names not every dataset provides and no
            role asks for (left out of samples).
        disagreements: common names whose kind, sample shape or numeric dtype differ between datasets.
        dtype_of: common numeric name -> the promoted dtype a mixture loader casts to.
    """

    per_dataset: list[dict[str, FeatureSpec]]
    roles: set[str] = field(default_factory=set)
    common: dict[str, FeatureSpec] = field(default_factory=dict)
    missing: dict[int, list[str]] = field(default_factory=dict)
    dropped: dict[str, list[int]] = field(default_factory=dict)
    disagreements: list[Disagreement] = field(default_factory=list)
    dtype_of: dict[str, str] = field(default_factory=dict)

    def fatal(self) -> list[Disagreement]:
        """Disagreements that make collate fail (shape or kind); dtype-only ones do not."""
        return [d for d in self.disagreements if d.what != "dtype"]


def _promote(dtypes: Sequence[str]) -> str:
    import numpy as np

    try:
        return str(np.result_type(*[np.dtype(d) for d in dtypes]))
    except TypeError:
        return dtypes[0]


def _shape_text(s: FeatureSpec) -> str:
    if s.kind == "camera":
        c, h, w = s.sample_shape
        return f"{c}x{h}x{w} (CxHxW)"
    return str(s.sample_shape)


def mixture_schema(datasets: Sequence[tuple[Mapping[str, Mapping], Mapping[str, str] | None]],
                   *, include_cameras: bool = True) -> MixtureSchema:
    """The :class:`MixtureSchema` of datasets given as ``(features, mapping)`` pairs, in mixture order."""
    per = [mapped_features(f, m, include_cameras=include_cameras) for f, m in datasets]
    roles: set[str] = set()
    for feats, m in datasets:
        for role, column in (m or {}).items():
            ft = feats.get(column)
            camera = isinstance(ft, Mapping) and ft.get("dtype") in CAMERA_DTYPES
            if include_cameras or not camera:  # without video, a role naming a camera is not asked for
                roles.add(role)
    schema = MixtureSchema(per, roles)
    if not per:
        return schema
    n = len(per)
    counts = Counter(name for feats in per for name in feats)
    order = list(dict.fromkeys(name for feats in per for name in feats))
    for i, feats in enumerate(per):
        lacking = sorted(r for r in roles if r not in feats)
        if lacking:
            schema.missing[i] = lacking
    for name in order:
        holders = [i for i, feats in enumerate(per) if name in feats]
        if counts[name] < n:
            if name not in roles:
                schema.dropped[name] = holders
            continue
        specs = [per[i][name] for i in range(n)]
        schema.common[name] = specs[0]
        checks = [("kind", lambda s: s.kind), ("shape", lambda s: _shape_text(s))]
        if all(s.kind == "numeric" for s in specs):
            checks.append(("dtype", lambda s: s.dtype))
        for what, key in checks:
            groups: dict[str, list[int]] = {}
            for i, s in enumerate(specs):
                groups.setdefault(key(s), []).append(i)
            if len(groups) > 1:
                ranked = dict(sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[1][0])))
                schema.disagreements.append(Disagreement(name, what, ranked))
                break  # report the most basic difference only
        if specs[0].kind == "numeric" and all(s.kind == "numeric" for s in specs):
            schema.dtype_of[name] = _promote([s.dtype for s in specs])
    return schema
