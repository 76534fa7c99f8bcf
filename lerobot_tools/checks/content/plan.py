"""Which columns the content checks read, their roles, and which action dimension drives which state dimension.

Roles follow lerobot 0.4.4's ``dataset_to_policy_features`` (``src/lerobot/datasets/utils.py``): a numeric feature
whose name starts with ``action`` is an ACTION, one that starts with ``observation`` is STATE (ENV); a
``state`` feature (openpi-style exports) is STATE too. Camera, text and the index columns are never content;
``next.reward``/``next.done``/``next.success`` are not either. Only features of shape ``[d]`` are read.
"""

from __future__ import annotations

from dataclasses import dataclass

from lerobot_tools.checks.content.episode import ContentRequest
from lerobot_tools.checks.content.options import ContentOptions

INDEX_COLUMNS = ("timestamp", "frame_index", "episode_index", "index", "task_index")


def role_of(name: str) -> str | None:
    """``"action"``, ``"state"`` or None for a numeric feature name (see module docstring)."""
    if name in INDEX_COLUMNS or name.startswith("next."):
        return None
    if name.startswith("action"):
        return "action"
    if name.startswith("observation") or name == "state":
        return "state"
    return None


def element_names(feat: dict, dims: int) -> list[str]:
    """The names of a feature's ``dims`` elements from ``info.json`` (a list, or a dict holding one list, as
    lerobot writes ``{"motors": [...]}``), else ``"0"``, ``"1"``...."""
    names = feat.get("names")
    if isinstance(names, dict) and len(names) == 1:
        names = next(iter(names.values()))
    if isinstance(names, list) and len(names) == dims and all(isinstance(n, str) for n in names):
        return list(names)
    return [str(i) for i in range(dims)]


@dataclass
class ContentPlan:
    """The :class:`ContentRequest` for a dataset, and what stage 2 needs to name its columns.

    Attributes:
        request: what the deep scan accumulates.
        labels: ``(D,)`` readable names of the summary columns: ``"action[3] wrist_flex.pos"``.
        features: ``(D,)`` the feature of each summary column.
        roles: ``(D,)`` ``"action"`` or ``"state"``.
        exempt: ``(D,)`` True for a gripper or hand dimension (named so): they legitimately rest at an extreme of
            their range (kalanos 0.8.2 and rdq 0.3.4 exempt them after false alarms on ALOHA), so Q006 skips them.
    """

    request: ContentRequest
    labels: list[str]
    features: list[str]
    roles: list[str]
    exempt: list[bool]


def plan_for(ds, schema, options: ContentOptions) -> ContentPlan | None:
    """The plan for a dataset whose first readable data file has ``schema``, or None when it has no action or
    state column of shape ``[d]``.

    Lag pairs: an action dimension and a state dimension of the same element name (``shoulder_pan.pos``), else,
    when one action and one state feature have the same number of dimensions, position by position.
    """
    from lerobot_tools.checks.stats.deep import numeric_columns

    cols = numeric_columns(ds, schema)
    columns: dict[str, tuple[int, str]] = {}
    for name, (dims, _) in cols.items():
        role = role_of(name)
        if role is not None:
            columns[name] = (dims, role)
    if not columns:
        return None
    feats = ds.features
    labels, features, roles, exempt = [], [], [], []
    offsets: dict[str, int] = {}
    names: dict[str, list[str]] = {}
    for name, (dims, role) in columns.items():
        offsets[name] = len(labels)
        names[name] = element_names(feats.get(name, {}), dims)
        for i, el in enumerate(names[name]):
            labels.append(f"{name}[{i}]" + (f" {el}" if el != str(i) else ""))
            features.append(name)
            roles.append(role)
            low = el.lower()
            exempt.append("gripper" in low or "hand" in low or "gripper" in name.lower())
    pairs: list[tuple[int, int]] = []
    actions = [n for n, (_, r) in columns.items() if r == "action"]
    states = [n for n, (_, r) in columns.items() if r == "state"]
    for a in actions:
        for s in states:
            shared = [el for el in names[a] if el in names[s] and not el.isdigit()]
            for el in shared:
                pairs.append((offsets[a] + names[a].index(el), offsets[s] + names[s].index(el)))
            if shared:
                break
        else:
            for s in states:
                if columns[s][0] == columns[a][0]:
                    pairs.extend((offsets[a] + i, offsets[s] + i) for i in range(columns[a][0]))
                    break
    request = ContentRequest(columns, pairs, options.idle_rel, options.lag_max_frames)
    return ContentPlan(request, labels, features, roles, exempt)
