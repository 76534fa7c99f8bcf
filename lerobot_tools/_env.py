"""Environment variables and cache locations, read in one place.

Defaults follow huggingface_hub (``HF_HOME`` -> ``$XDG_CACHE_HOME/huggingface`` -> ``~/.cache/huggingface``;
``HF_HUB_CACHE`` -> ``$HF_HOME/hub``) and lerobot (``HF_LEROBOT_HOME`` -> ``$HF_HOME/lerobot``; lerobot v3
downloads snapshots into ``$HF_LEROBOT_HOME/hub``). Values are read at call time so tests can set them.
"""

from __future__ import annotations

import os
from pathlib import Path


def hf_home() -> Path:
    """The Hugging Face home folder (``HF_HOME``)."""
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "huggingface"


def hf_hub_cache() -> Path:
    """The huggingface_hub cache (``HF_HUB_CACHE``, legacy ``HUGGINGFACE_HUB_CACHE``)."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            return Path(os.environ[var]).expanduser()
    return hf_home() / "hub"


def lerobot_home() -> Path:
    """Where LeRobot looks for local datasets (``HF_LEROBOT_HOME``, default ``$HF_HOME/lerobot``)."""
    if os.environ.get("HF_LEROBOT_HOME"):
        return Path(os.environ["HF_LEROBOT_HOME"]).expanduser()
    return hf_home() / "lerobot"


def hub_caches() -> list[Path]:
    """Snapshot caches searched for ``datasets--org--name`` folders, in order of preference."""
    caches = [hf_hub_cache(), lerobot_home() / "hub"]
    out: list[Path] = []
    for c in caches:
        if c not in out:
            out.append(c)
    return out


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) is set to a true value."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in {"1", "true", "yes", "on"}:
            return True
    return False


#: Environment variable bounding the open video decoders per worker (the name lerobot's decoder cache uses).
VIDEO_DECODER_CACHE_SIZE = "LEROBOT_VIDEO_DECODER_CACHE_SIZE"


def video_decoder_cache_size() -> int | None:
    """``LEROBOT_VIDEO_DECODER_CACHE_SIZE`` when set to a positive integer, else None."""
    raw = os.environ.get(VIDEO_DECODER_CACHE_SIZE, "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else None


def nvidia_driver_capabilities() -> str | None:
    """``NVIDIA_DRIVER_CAPABILITIES`` as set by the NVIDIA container runtime (``video`` is needed for NVDEC)."""
    return os.environ.get("NVIDIA_DRIVER_CAPABILITIES")


#: the Hub huggingface_hub talks to when ``HF_ENDPOINT`` is not set
DEFAULT_ENDPOINT = "https://huggingface.co"


def endpoint_from_env() -> str:
    """``HF_ENDPOINT`` read now (not at import time), trailing ``/`` removed; default :data:`DEFAULT_ENDPOINT`."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def endpoint_problem(url: str) -> str | None:
    """Why ``url`` cannot be a Hub endpoint (``HF_ENDPOINT``), in a few words, or None when it can: it must be
    an ``http``/``https`` URL with a host and, if it names one, a port that is a number in 0-65535."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a port out of range or not a number)
    except ValueError as exc:
        return f"not a valid URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return "not an http(s) URL"
    if not parts.hostname:
        return "a URL without a host"
    return None
