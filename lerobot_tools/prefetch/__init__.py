"""``lrtool prefetch``: prewarm the local copies of a whole mixture with few, budgeted, 429-safe requests.

Public API (see each module):

* :func:`prefetch` (``run``) -> :class:`PrefetchReport` (``report``), options in :class:`PrefetchOptions`;
  :func:`render_text` (``report``) prints the per-repo table; ``offline`` answers ``--offline`` without requests.
* :class:`Budgets`, :class:`BucketBudget`, :class:`Clock` (``budget``): one request budget per Hub
  rate-limit bucket, shared by all threads, adapting to the server's ``RateLimit`` headers.
* :func:`bucket_of_url`, :func:`parse_ratelimit`, :func:`parse_ratelimit_policy`, :func:`parse_retry_after`
  (``ratelimit``): the Hub's buckets and the rate-limit headers.
* :class:`HubClient`, :class:`RetryPolicy`, :class:`HubError` (``hub``): revision resolve, paginated
  tree listing, resumable verified downloads.
* :class:`LockFile`, :func:`default_lock_path` (``lock``): ``mixture.lock``.
* :func:`plan_jobs`, :func:`episode_files` (``plan``): which repos and files a mixture needs.
* :func:`check_present`, :class:`TreeFile` (``local``): what is already on disk, without requests.

Importing this package does not import huggingface_hub or httpx; they load on the first request.
"""

from lerobot_tools.prefetch.budget import BucketBudget, Budgets, Clock
from lerobot_tools.prefetch.hub import HubClient, HubError, RetryPolicy
from lerobot_tools.prefetch.local import TreeFile, check_present
from lerobot_tools.prefetch.lock import LockFile, default_lock_path
from lerobot_tools.prefetch.plan import RepoJob, episode_files, plan_jobs
from lerobot_tools.prefetch.ratelimit import bucket_of_url, parse_ratelimit, parse_ratelimit_policy, parse_retry_after
from lerobot_tools.prefetch.report import PrefetchReport, RepoResult, render_text
from lerobot_tools.prefetch.run import PrefetchOptions, prefetch

__all__ = [
    "BucketBudget", "Budgets", "Clock", "bucket_of_url", "parse_ratelimit", "parse_ratelimit_policy",
    "parse_retry_after", "HubClient", "HubError", "RetryPolicy", "TreeFile", "check_present",
    "LockFile", "default_lock_path", "RepoJob", "episode_files", "plan_jobs", "PrefetchOptions",
    "PrefetchReport", "RepoResult", "prefetch", "render_text",
]
