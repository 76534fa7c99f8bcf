"""The check catalogue: every check lrtool runs, with a stable ID, a severity and its documentation.

IDs never change meaning once released. The letter names the family: ``M`` targets and mixtures, ``I`` info.json,
``S`` parquet schema drift, ``T`` tasks, ``C`` counts and indices, ``D`` deep (row-level) checks, ``F`` files, ``R``
row groups, ``G`` statistics, ``X`` mixture compatibility (datasets of one mixture file compared with each other,
``docs/mixtures.md``), ``Q`` episode content and ``L`` what the metadata says before download (these three in
:mod:`lerobot_tools.checks.catalogue_across`). ``docs/checks.md`` is generated from this module (``lrtool checks --format markdown``), so
the docs cannot drift from the code. Each check also states how it is repaired (:attr:`Check.repair`); ``lrtool
repair``'s tables are derived from that, and a test keeps its list of fixes in agreement. Sources in the texts:
``docs/format.md`` (the on-disk format, with the lerobot and OpenTau code that establishes each fact) and
``docs/failure-modes.md`` (failure modes of real datasets, with the upstream issues and commits that report them),
both in this repository.
"""

from __future__ import annotations

from lerobot_tools.checks.catalogue_across import ACROSS_DATASETS_CHECKS
from lerobot_tools.checks.check import AUTO, EXPLICIT, MIXTURE_REPAIR, Check, _auto, manual  # noqa: F401  (re-exported)
from lerobot_tools.findings import ERROR, INFO, SEVERITIES, WARNING  # noqa: F401  (re-exported)


_RESHARD = {"repair": EXPLICIT, "repair_by": "lrtool reshard",
            "repair_note": "row-group layout is rewritten by `lrtool reshard`, not by repair"}
_MIXTURE = MIXTURE_REPAIR


_CHECKS = [
    # ------------------------------------------------------------------ M: targets and mixtures
    Check("M001", "target-unresolved", ERROR, "A target could not be resolved to a dataset folder.",
          "A TARGET or mixture entry names a folder that does not exist, or a repo id found in neither "
          "$HF_LEROBOT_HOME/<repo_id> nor a hub snapshot cache (refs resolved offline).",
          "The training job would try to download it (lerobot 0.4.4's `LeRobotDataset.__init__` catches FileNotFoundError and calls `pull_from_repo`, src/lerobot/datasets/lerobot_dataset.py) or stop with FileNotFoundError / RepositoryNotFoundError on an offline node.",
          "Fix the path or revision, or prefetch the dataset (`lrtool prefetch mixture.txt`).",
          **_MIXTURE),
    Check("M002", "mixture-entry-invalid", ERROR, "A mixture entry is malformed.",
          "Each line of a text mixture (`repo_id[@revision]` or path, optional `episodes=0-9,12`) and each "
          "OpenTau `dataset_mixture.datasets[*]` object (repo_id/root/revision/episodes).",
          "The training config fails to parse, or silently trains on the wrong subset; lrtool's `read_mixture` "
          "(lerobot_tools/dataset/mixture.py), which `MixtureDataset` and `smoke MIXTURE` use, refuses the file.",
          "Correct the entry as the message says.",
          **_MIXTURE),
    Check("M003", "feature-mapping", ERROR, "A mixture entry maps a role to a column the dataset does not have.",
          "OpenTau `data_features_name_mapping` values against the dataset's declared features (docs/failure-modes.md#shared-repo-mapping).",
          "The mixture loader raises KeyError on the first batch from that dataset, hours into a run.",
          "Map the role to an existing feature name (see the dataset's meta/info.json features).",
          **_MIXTURE),
    Check("M004", "episodes-out-of-range", ERROR, "A mixture entry requests episodes the dataset does not have.",
          "Requested `episodes` / `excluded_episodes` against the episode indices in the metadata.",
          "lerobot warns and ignores out-of-range episodes (lerobot after 0.4.4, docs/format.md#loader-assumptions), so the run silently trains "
          "on less data; other loaders raise IndexError.",
          "Restrict the episode list to indices the dataset has.",
          **_MIXTURE),
    Check("M005", "episodes-none-selected", ERROR, "A mixture entry selects no episode.",
          "The entry's `episodes` minus its `excluded_episodes` (OpenTau) against the episode indices in the "
          "metadata: an `excluded_episodes` covering every episode, or every requested one, or an empty `episodes`.",
          "lrtool's `MixtureDataset` raises DatasetError 'no episodes selected' and its `FrameDataset` 'no episodes "
          "to load' (lerobot_tools/loaders/mixture.py, frames.py), so the mixture does not load at all; a loader "
          "that skips the entry silently trains without the dataset.",
          "Shorten excluded_episodes, or remove the entry from the mixture.",
          **_MIXTURE),
    # ------------------------------------------------------------------ I: info.json
    Check("I001", "info-missing", ERROR, "meta/info.json is missing: not a LeRobot dataset.",
          "The dataset root must hold meta/info.json.",
          "Every loader reads info.json first; without it lerobot tries to download the dataset from the Hub.",
          "Point the target at the dataset root, or restore meta/info.json.",
          **manual("not a LeRobot dataset")),
    Check("I002", "info-json-invalid", ERROR, "meta/info.json is not valid JSON.",
          "meta/info.json parses as a JSON object.",
          "json.JSONDecodeError at dataset construction: lerobot 0.4.4's `LeRobotDatasetMetadata` reads it with "
          "`load_info` -> `load_json` (src/lerobot/datasets/utils.py).",
          "Restore the file (a truncated write is the usual cause); lrtool cannot repair it.",
          **manual("meta/info.json is not valid JSON")),
    Check("I003", "info-schema", ERROR, "meta/info.json violates the JSON Schema for its codebase_version.",
          "Required keys and types per layout (v2.x: counters, templates, chunks_size; v3.0: codebase_version, fps, "
          "features), validated with jsonschema against lerobot_tools/schemas/info.schema.json.",
          "lerobot v3 raises TypeError for a missing required key and ValueError for non-positive sizes "
          "(docs/format.md#info-json); v2 loaders raise KeyError.",
          "Add or correct the key named in the message."),
    Check("I004", "codebase-version", ERROR, "codebase_version is missing or not a known version.",
          "codebase_version is one of v2.0, v2.1, v3.0.",
          "lerobot raises BackwardCompatibilityError / NotImplementedError for other majors (lerobot 0.4.4 `datasets/utils.py` check_version_compatibility, docs/format.md#versions); "
          "an unparseable value raises packaging.version.InvalidVersion.",
          "Set the version the files are laid out in, or convert the dataset."),
    Check("I005", "fps-invalid", ERROR, "fps is not a positive integer.",
          "info.json fps is an integer > 0 (a float such as 30.0 is a warning).",
          "fps <= 0 raises ValueError in lerobot v3; a float breaks frame-index arithmetic and video "
          "base_rate comparisons (docs/failure-modes.md#fractional-fps).",
          "Set fps to the integer frame rate the data was recorded at (`lrtool repair` casts 30.0 to 30).",
          **_auto("fix_fps", "fps 30.0 -> 30 (an integral float written as the integer)")),
    Check("I006", "feature-invalid", ERROR, "A feature declaration is malformed.",
          "Each feature has a known dtype (a numpy dtype, or image/video/string/language), an integer shape of "
          "rank 1-5, and cameras (image/video) a rank-3 shape.",
          "lerobot raises ValueError (rank > 5 or 0) or NotImplementedError (unknown dtype) while building "
          "the Features; OpenTau requires rank-3 camera shapes.",
          "Correct dtype/shape from the data (`lrtool repair` takes them from consistent parquet files).",
          **_auto("fix_feature_invalid", "malformed dtype/shape of a non-camera feature taken from its column when "
                                         "every data file agrees")),
    Check("I007", "feature-names-shape", WARNING, "A feature's names do not match its shape.",
          "`names` is null, a list of shape[0] strings (cameras: one per dimension), or a dict of such lists.",
          "Policies index by names (camera names[2] decides HWC vs CHW, docs/failure-modes.md#camera-names); a mismatch silently "
          "mislabels dimensions or raises TypeError.",
          "`lrtool repair` flattens a singly nested list; a length mismatch needs the right names by hand.",
          **_auto("fix_names", "names [[...]] flattened when the inner list has one name per element")),
    Check("I008", "path-template", ERROR, "data_path or video_path is not a valid template.",
          "Templates use only {episode_chunk}/{episode_index}/{video_key} (v2.x) or "
          "{chunk_index}/{file_index}/{video_key} (v3.0), stay inside the dataset root, and video_path is set "
          "when video features exist (docs/failure-modes.md#video-path-mismatch). Non-default v3.0 templates are a warning: the v3 "
          "loader globs data/*/*.parquet regardless (lerobot 0.4.4 `datasets/utils.py` load_nested_dataset, docs/format.md#layouts). video_path set on a dataset without "
          "video features is only info: lerobot's own writer keeps the default template whenever "
          "use_videos=True, cameras or not (lerobot 0.4.4 datasets/utils.py create_empty_dataset_info), and "
          "LeRobotDataset formats it only for meta.video_keys (get_video_file_path), so no loader reads it.",
          "KeyError/IndexError when a loader formats the path, or files looked up in the wrong place.",
          "Restore the default template for the layout, or fix the placeholder named.",
          **manual("the path template needs a person (repair only rewrites video_path to a layout that holds the "
                    "files)")),
    Check("I009", "camera-names", WARNING, "A camera feature's names are not [height, width, channels].",
          "Image/video features declare names ['height','width','channels'] (or 'channel'), or channel-first "
          "names ['channel(s)','height','width'] on a shape that starts with a channel count (1, 3 or 4).",
          "lerobot's dataset_to_policy_features raises TypeError on names: null (huggingface/lerobot#3786) and treats "
          "other names as CHW, silently mis-permuting HWC images (docs/failure-modes.md#camera-names).",
          "Set names to [\"height\", \"width\", \"channels\"] for HWC shapes."),
    Check("I010", "default-features", WARNING, "A default feature is missing or has the wrong dtype.",
          "timestamp float32, frame_index/episode_index/index/task_index int64, each shape [1] (lerobot 0.4.4 `datasets/utils.py` DEFAULT_FEATURES, docs/format.md#features).",
          "Loaders index episodes, frames and tasks through these columns; without them delta windows, video "
          "lookups and task strings fail.",
          "Declare the default features as lerobot writes them."),
    Check("I011", "feature-name-slash", ERROR, "A feature name contains '/'.",
          "Feature names never contain '/' (lerobot _validate_feature_names).",
          "lerobot 0.4.4's `load_stats` flattens stats.json and splits the keys back on '/' (`cast_stats_to_numpy`, "
          "src/lerobot/datasets/utils.py): the statistics of `a/b` come back under `a`, so the normaliser finds none for the feature "
          "(docs/failure-modes.md#slash-in-name).",
          "Rename the feature (info.json, parquet column, stats)."),
    # ------------------------------------------------------------------ S: schema drift
    Check("S001", "column-missing", ERROR, "A declared feature has no column in the data parquet.",
          "Every declared non-video feature is a column of every data file (read from parquet footers), and so is "
          "every column the loader reads from each row whether declared or not: timestamp, episode_index and "
          "task_index (lerobot 0.3.3 for v2.x), plus index and, with cameras, timestamp (lerobot 0.4.4 for v3.0; "
          "`LeRobotDataset.__getitem__` raises KeyError without them).",
          "lerobot 0.4.4's `load_nested_dataset` (src/lerobot/datasets/utils.py) casts every data file to the declared features with `Dataset.from_parquet(features=...)`: the missing column comes back as None, and collation fails with a TypeError mid-epoch "
          "(docs/failure-modes.md#missing-column, verified with datasets 4.8.5).",
          "Remove the declaration (and its stats) or backfill the column.",
          **manual("a declared column absent from the data cannot be backfilled")),
    Check("S002", "column-undeclared", ERROR, "A parquet column is not declared in info.json features.",
          "Every data column is a declared feature (e.g. `language_events` added by annotation tools).",
          "lerobot v3 passes info.json Features to the reader: DatasetGenerationError caused by CastError "
          "\"column names don't match\" (docs/failure-modes.md#undeclared-column).",
          "`lrtool repair` declares it from its Arrow type, or drops it from every file with --drop-undeclared.",
          **_auto("fix_undeclared", "undeclared column declared from its Arrow type (every file agrees), or dropped "
                                    "with --drop-undeclared")),
    Check("S003", "dtype-mismatch", ERROR, "A column's element type differs from the declared dtype.",
          "Arrow value type vs declared dtype (float64 stored where float32 is declared, int32 vs int64, ...).",
          "lerobot casts silently, but loaders that read the parquet schema (OpenTau) yield float64 tensors, "
          "so collating with other datasets fails or doubles memory; a string/number mismatch fails the cast. "
          "A float width alone (float64 stored, float32 declared, or the reverse) is a warning: lerobot 0.4.4 casts "
          "to the declared features (datasets' cast) and lerobot 0.3.3 builds tensors from Python floats "
          "(`hf_transform_to_torch`), so both hand out the declared type.",
          "`lrtool repair` re-declares the dtype when every file agrees; otherwise rewrite the files.",
          **_auto("fix_dtype", "dtype re-declared from the Arrow schema when every data file stores the same type; "
                               "otherwise (files disagree, or a default feature) the odd files cast to the declared "
                               "dtype when every value converts exactly")),
    Check("S004", "shape-mismatch", ERROR, "A column's shape differs from the declared shape.",
          "Scalar vs list: a [1]-shaped feature must be a plain scalar column, not a one-element list; a [N] "
          "feature a fixed_size_list of length N (lerobot 0.4.4 `datasets/utils.py` get_hf_features_from_features, docs/format.md#columns).",
          "lerobot 0.4.4's `load_nested_dataset` (src/lerobot/datasets/utils.py) casts every data file to the declared features with `Dataset.from_parquet(features=...)`: TypeError: Couldn't cast array of type fixed_size_list<element: float>[1] to float (verified), or a "
          "length mismatch fails the cast.",
          "`lrtool repair` casts one-element lists to scalars; other lengths need the data fixed.",
          **_auto("fix_shape", "[1] feature stored as a one-element list cast to a scalar; vector shape re-declared "
                               "when every file, its names and stats agree")),
    Check("S005", "variable-length-list", WARNING, "A fixed-length vector is stored as a variable-length list.",
          "A [N] feature stored as list<T> instead of fixed_size_list<T>[N] (every pandas round-trip does this, "
          "docs/failure-modes.md#variable-lists).",
          "lerobot casts on load and fails on the first row with another length; readers of the embedded "
          "schema see untyped lists.",
          "`lrtool repair` casts to fixed_size_list after checking that every row has the declared length.",
          **_auto("fix_variable_lists", "variable-length list cast to fixed_size_list[N] after every row is checked "
                                        "to hold N elements")),
    Check("S006", "hf-metadata", WARNING, "The `huggingface` schema metadata is missing or disagrees with info.json.",
          "The parquet key-value metadata `huggingface` (features JSON written by datasets) against info.json.",
          "lerobot <= 0.3 and OpenTau read that metadata: a disagreement yields other types than info.json "
          "declares; `_type: List` is unreadable by datasets < 4 (docs/failure-modes.md (#variable-lists, #list-type-name)).",
          "`lrtool repair` rewrites the metadata from info.json.",
          **_auto("fix_hf_metadata", "`huggingface` schema metadata rebuilt from info.json as datasets writes it")),
    Check("S007", "cross-file-drift", ERROR, "Data files of one dataset have different schemas.",
          "Arrow schemas (names, order-insensitive, and types) of every data file compared with each other.",
          "Concatenating the files fails (OpenTau loads without Features: files disagree only at concatenation) "
          "or casts differently per file.",
          "`lrtool repair` casts the odd files to the declared dtype when every value converts exactly; other "
          "differences need the files rewritten in one schema.",
          **_auto("fix_dtype", "files that differ only in a column's element type cast to the declared dtype (as "
                               "S003)")),
    # ------------------------------------------------------------------ T: tasks
    Check("T001", "tasks-file", ERROR, "The task table is missing or malformed.",
          "meta/tasks.jsonl (v2.x, one {task_index, task} per line) or meta/tasks.parquet (v3.0) exists and parses.",
          "lerobot reads tasks at construction: FileNotFoundError or KeyError on the first sample.",
          "Restore the file (a backup, or the Hub); lrtool cannot rebuild a missing task table.",
          **manual("the task table is missing or malformed")),
    Check("T002", "task-label-missing", ERROR, "An episode references a task label missing from the task table.",
          "Every label in episodes.jsonl `tasks` / meta/episodes `tasks` exists in the task table (docs/failure-modes.md#episode-task-drift).",
          "KeyError when the loader maps the episode's task string to an index; OpenTau falls back with a warning.",
          "`lrtool repair` appends the missing labels with new task indices.",
          **_auto("fix_tasks", "task labels referenced by episodes appended to tasks.jsonl / tasks.parquet with new "
                               "indices")),
    Check("T003", "task-index-out-of-range", ERROR, "A data row's task_index has no task.",
          "task_index values in every data file (from footer statistics, else the column) lie in the task table.",
          "IndexError: single positional indexer is out-of-bounds in `self.meta.tasks.iloc[task_idx]` (lerobot 0.4.4 `__getitem__`, src/lerobot/datasets/lerobot_dataset.py) (docs/failure-modes.md#missing-task-label, huggingface/lerobot#4017).",
          "Add the missing tasks or fix the task_index column; not mechanical.",
          **manual("data rows point at tasks that do not exist")),
    Check("T004", "tasks-parquet-form", ERROR, "meta/tasks.parquet is not in the form loaders read.",
          "v3.0 tasks.parquet: the task strings are the pandas index, task_index == row position "
          "(lerobot 0.4.4 `datasets/utils.py` write_tasks/load_tasks, docs/format.md#tasks). An unnamed index (__index_level_0__) is what lerobot's own writer produces "
          "(lerobot 0.4.4 datasets/utils.py write_tasks: DataFrame indexed by task, DataFrame.to_parquet), so it "
          "is only info: load_tasks reads it with pandas.read_parquet, whose pandas metadata restores the index, "
          "and LeRobotDataset.__getitem__ takes tasks.iloc[task_index].name. Task strings in a plain column "
          "(no pandas index) or in no column at all are errors.",
          "lerobot looks tasks up by position with the pandas index as text: with the strings in a plain column "
          "pandas gives a RangeIndex, and every sample's task silently becomes the row number "
          "(LeRobotDataset.__getitem__, tasks.iloc[task_index].name). Readers that look for a 'task' column "
          "(pyarrow, polars, other tools) find none in the unnamed-index form.",
          "`lrtool repair` rewrites a plain-column table in the pandas-index form with the same mapping; the "
          "unnamed-index form is left alone unless asked for with `lrtool repair --only T004`.",
          **_auto("fix_tasks", "tasks.parquet rewritten in the pandas-index form (index 'task', column task_index), "
                               "same mapping")),
    Check("T005", "task-duplicate", WARNING, "The same task label appears more than once.",
          "Labels in the task table are unique.",
          "Inverse maps are last-wins, so episodes get another task_index than their rows (docs/failure-modes.md#duplicate-tasks); v3.0 "
          "cannot represent duplicates and conversion collapses them.",
          "Merge the duplicates and renumber task_index in the data; not mechanical.",
          **manual("duplicate task labels need merging and the data renumbered")),
    Check("T006", "total-tasks", ERROR, "info.json total_tasks differs from the task table.",
          "total_tasks == number of rows of the task table.",
          "total_tasks == 0 makes lerobot skip loading tasks (meta.tasks = None) and crash on the first sample "
          "(docs/failure-modes.md#counters).",
          "`lrtool repair` recomputes it.",
          **_auto("fix_counters", "total_tasks recomputed from the task table")),
    Check("T007", "task-indices", ERROR, "Task indices are not 0..N-1 in row order.",
          "tasks.jsonl / tasks.parquet task_index values equal their row position.",
          "lerobot looks tasks up by position (tasks.iloc[task_index]), OpenTau by value: the two disagree and "
          "samples get the wrong instruction (docs/failure-modes.md#positional-tasks).",
          "Sort and renumber; `lrtool repair` rewrites a v3.0 table that only needs reordering.",
          **_auto("fix_tasks", "v3.0 tasks.parquet rows sorted so task_index == row position (mapping unchanged)")),
    # ------------------------------------------------------------------ C: counts and indices
    Check("C001", "total-episodes", ERROR, "info.json total_episodes differs from the episode metadata.",
          "total_episodes == number of episode-metadata rows.",
          "0 makes lerobot skip loading episodes; too large makes it think episodes are missing and try the Hub "
          "(docs/failure-modes.md#counters).",
          "`lrtool repair` recomputes it from what is on disk.",
          **_auto("fix_counters", "total_episodes recomputed from the episode metadata")),
    Check("C002", "total-frames", ERROR, "info.json total_frames differs from the rows on disk.",
          "total_frames == sum of data parquet row counts (footers) == sum of episode lengths.",
          "len(LeRobotDataset) is total_frames, not the row count: too small hides the tail, too large raises "
          "IndexError (lerobot 0.4.4 LeRobotDataset.num_frames, docs/format.md#info-json). A warning for v2.x: "
          "lerobot 0.3.3's num_frames is the rows it loaded.",
          "`lrtool repair` recomputes it.",
          **_auto("fix_counters", "total_frames recomputed from the data files (only when every data file is "
                                  "readable)")),
    Check("C003", "total-videos-chunks", WARNING, "v2.x total_videos / total_chunks are wrong.",
          "total_videos == episodes x video keys; total_chunks == ceil(total_episodes / chunks_size).",
          "Tools that trust the counters (converters, progress estimates) miscount; the v2.1->v3.0 converter "
          "raises KeyError without them.",
          "`lrtool repair` recomputes them.",
          **_auto("fix_counters", "total_videos / total_chunks recomputed (v2.x)")),
    Check("C004", "episode-indices", ERROR, "Episode indices are not 0..N-1 in metadata order.",
          "episode_index of the metadata rows equals their position (docs/format.md#L1); no duplicates.",
          "lerobot indexes episodes by position: the wrong episode's files and offsets are read, or IndexError.",
          "Renumber the episodes; not mechanical.",
          **manual("episode indices need renumbering across metadata and data")),
    Check("C005", "episode-length", ERROR, "An episode's length differs from its rows in the data.",
          "v2.x: each episode's parquet has `length` rows. v3.0: each data file has the summed lengths of the "
          "episodes the metadata places in it (and, with --deep, each episode exactly `length` rows).",
          "Episode boundaries shift: lerobot 0.4.4's `_get_query_indices` (src/lerobot/datasets/lerobot_dataset.py) clamps delta windows to the metadata's `dataset_from_index`..`dataset_to_index`, so windows and padding masks cross into the next episode (docs/failure-modes.md#rows-out-of-order).",
          "Fix the episode metadata or the data; not mechanical.",
          **manual("episode lengths disagree with the data; which one is right is not mechanical")),
    Check("C006", "index-ranges", ERROR, "v3.0 dataset_from_index / dataset_to_index are not contiguous.",
          "to - from == length; ranges ascending and back to back from 0; the last ends at total_frames "
          "(docs/format.md#L2, docs/format.md#L3; docs/failure-modes.md#scrambled-ranges).",
          "Padding masks true almost everywhere (huggingface/lerobot#1919) or KeyError in `_absolute_to_relative_idx` (lerobot 0.4.4 `_get_query_indices`, src/lerobot/datasets/lerobot_dataset.py).",
          "Recompute the ranges from the episode lengths; not applied automatically.",
          **manual("index ranges need recomputing with the data re-checked")),
    Check("C007", "episodes-metadata", ERROR, "The episode metadata is missing or malformed.",
          "meta/episodes.jsonl (v2.x) or meta/episodes/*/*.parquet (v3.0) exists and every row has the "
          "columns loaders need (episode_index, length, tasks; v3.0 data/video indices and ranges, and each "
          "camera's videos/<key>/from_timestamp and to_timestamp: their absence is reported once per camera, and "
          "F010/F020/F021 are then not checked for its episodes instead of reporting every frame query).",
          "Loaders cannot locate episodes: lerobot 0.4.4's `LeRobotDatasetMetadata.load_metadata` -> `load_episodes` (src/lerobot/datasets/utils.py) raises FileNotFoundError or ArrowInvalid, or falls back to a Hub download. A metadata "
          "file that is a placeholder is reported as F004-F006 instead, a truncated one here; either way the "
          "data and video files are still checked, found from the path templates and the folders on disk. "
          "Without videos/<key>/from_timestamp, LeRobotDataset._query_videos "
          "(src/lerobot/datasets/lerobot_dataset.py) raises KeyError for every sample (TypeError for a row whose "
          "value is null); without to_timestamp, "
          "StreamingLeRobotDataset.make_frame (src/lerobot/datasets/streaming_dataset.py) raises KeyError.",
          "Restore the metadata; not mechanical.",
          **manual("the episode metadata is missing or malformed")),
    Check("C008", "splits", WARNING, "info.json splits is malformed, out of range or leaves episodes out.",
          "splits maps names to 'start:end' episode ranges within total_episodes, and together they cover every "
          "episode (compared with info.json and the readable episode metadata, never a count from an unreadable "
          "file).",
          "Not used by the lerobot loaders, but split-aware tooling reads it.",
          "`lrtool repair` rewrites {'train': '0:<total_episodes>'}.",
          **_auto("fix_counters", "splits set to {'train': '0:<episodes>'} when it names one split")),
    # ------------------------------------------------------------------ D: deep (row level)
    Check("D001", "frame-index", WARNING, "frame_index does not run 0..length-1 within an episode.",
          "Per episode, frame_index is 0, 1, ..., length-1 in row order.",
          "Training reads the right data: lerobot 0.4.4's `LeRobotDataset.__getitem__` "
          "(src/lerobot/datasets/lerobot_dataset.py) and lrtool's loaders find frames by `index`, `episode_index` "
          "and `timestamp`, never by frame_index. What reads the column (per-frame filters, visualisers, converters "
          "that recompute timestamps from it) gets wrong positions; timestamps are checked on their own (D003).",
          "Regenerate frame_index; not mechanical.", deep=True,
          **manual("frame indices out of sequence need the recording checked")),
    Check("D002", "global-index", ERROR, "The global index column is not contiguous.",
          "index == row position over the files in loader order (v3.0: == dataset_from_index + frame_index).",
          "lerobot 0.4.4's `__getitem__` takes the row's `index` as its absolute position for delta windows (`_get_query_indices`, src/lerobot/datasets/lerobot_dataset.py): silently wrong rows (docs/format.md#L2).",
          "Renumber index; not mechanical.", deep=True,
          **manual("a non-contiguous global index needs the data renumbered")),
    Check("D003", "timestamp-sync", ERROR, "timestamp is not k / fps for an episode's k-th frame, within tolerance.",
          "|timestamp - k / fps| <= tolerance_s for the k-th row of each episode (k is what frame_index should hold; "
          "default 1e-4 s, --tolerance-s).",
          "Video frames are looked up by timestamp: FrameTimestampError or torchcodec IndexError at decode time "
          "(docs/failure-modes.md#timestamps; lerobot v3 no longer checks at load).",
          "Rewrite timestamps as frame_index / fps if the frames really are evenly spaced: `lrtool repair` does so "
          "from the videos' own frame timestamps when every camera holds one frame per row at a constant rate "
          "(docs/video-timestamps.md#repair).", deep=True,
          **_auto("fix_timestamp_column", "timestamp re-derived from the videos' frame timestamps when every camera "
                                          "holds one evenly spaced frame per row; otherwise left: may be real clock "
                                          "times")),
    Check("D004", "row-order", ERROR, "Data rows are not ordered by episode.",
          "Each episode's rows are contiguous and episodes ascend in file order, in the file the metadata names.",
          "OpenTau raises RuntimeError (not ordered by ascending episode_index); lerobot reads wrong rows.",
          "Sort the rows by (episode_index, frame_index); not mechanical.", deep=True,
          **manual("rows out of order need the data re-sorted and re-indexed")),
    Check("D005", "list-lengths", ERROR, "A variable-length list column has rows of the wrong length.",
          "Every row of a list column stored without a fixed size has the declared length.",
          "lerobot 0.4.4's `load_nested_dataset` (src/lerobot/datasets/utils.py) casts every data file to the declared features with `Dataset.from_parquet(features=...)`: the cast to the declared fixed length fails on that row (TypeError mid-epoch) (docs/failure-modes.md#variable-lists).",
          "Fix or drop the offending rows; not mechanical.", deep=True,
          **manual("rows of the wrong length cannot be cast without changing data")),
    # ------------------------------------------------------------------ F: files
    Check("F001", "data-file-missing", ERROR, "A data file the metadata references is missing.",
          "Every data parquet implied by the episode metadata and data_path exists; a missing one is looked for "
          "under the neighbouring layouts (another top folder, another chunk folder) and the finding says where "
          "and how many. A dataset whose data/ holds nothing the loader reads (no folder, no parquet) gets one "
          "finding saying so, whatever the metadata names.",
          "lerobot sees the episode as not cached and tries to download it from the Hub (lerobot 0.4.4 "
          "LeRobotDataset._check_cached_episodes_sufficient, docs/format.md#L8); with no parquet at all, lerobot "
          "0.4.4's load_nested_dataset raises FileNotFoundError and lerobot 0.3.3's load_dataset finds nothing.",
          "Re-download the dataset (`lrtool prefetch`); if validate found the files in a neighbouring layout, "
          "`lrtool repair --move-files` moves them to where data_path points.",
          **_auto("fix_data_files", "with --move-files only: the data files found in a neighbouring layout moved to "
                                    "where data_path points; a data file found nowhere cannot be recreated")),
    Check("F002", "video-file-missing", ERROR, "A video file the metadata references is missing.",
          "Every mp4 implied by the episode metadata and video_path exists; a missing one is looked for under the "
          "neighbouring layouts, and the finding says where and how many (`43 of the 50 expected video files are "
          "under video/…; 7 are absent everywhere`). A dataset whose videos are all missing fails.",
          "Video decode raises FileNotFoundError for the first sample of that episode (lerobot 0.4.4's `decode_video_frames`, src/lerobot/datasets/video_utils.py), or lerobot tries the Hub.",
          "Re-download the videos; if they sit in a neighbouring layout (validate says where and how many: "
          "another top folder, the other version's camera/chunk order, another chunk folder), `lrtool repair` can "
          "rewrite video_path or move the files (--move-files).",
          **_auto("fix_video_path", "video_path rewritten to the neighbouring layout that holds the missing videos, "
                                    "or the files found moved (--move-files); the rest stay missing")),
    Check("F003", "orphan-file", ERROR, "A file sits where loaders look but no metadata references it.",
          "Files under data/, meta/episodes/ (v3.0) and videos/ against the set the metadata implies. Orphan "
          "parquet under data/ or meta/episodes/ is an error (loaders glob them); orphan videos are a warning. "
          "data/ is judged by what the loader reads: v3.0 data/*/*.parquet; v2.x every file below data/ "
          "(lerobot 0.3.3 `load_dataset(\"parquet\", data_dir=...)` takes any name at any depth and fails on a "
          "file that is not parquet).",
          "The v3 loader globs data/*/*.parquet: stray copies add rows and shift positional indexing "
          "(docs/failure-modes.md#orphan-files); lerobot <= 0.3 loaded everything under data/.",
          "Delete the stray file, or fix the metadata that should reference it. (Referenced files found in a "
          "neighbouring layout are reported by F001/F002, not here.)",
          **manual("nothing references the file: delete it or fix the metadata by hand")),
    Check("F004", "lfs-pointer", ERROR, "A file is a Git LFS pointer, not the content.",
          "The first bytes of every referenced parquet and mp4 and of every metadata file (info.json, episodes, "
          "tasks, stats; a few hundred bytes per file) before anything parses it. When several files are "
          "pointers, the report says so once at the top, with the count per folder.",
          "ArrowInvalid: Could not open Parquet input source (lerobot #2268), a decode failure, or, for a "
          "metadata file, json.JSONDecodeError / ArrowInvalid when LeRobotDatasetMetadata loads it.",
          "Fetch the content: `git lfs pull`, or re-download with lrtool prefetch.",
          **manual("the file is a Git LFS pointer; its content is not on disk")),
    Check("F005", "error-page", ERROR, "A file is an HTML/XML/JSON error page saved under a data name.",
          "The first bytes of every referenced parquet and mp4 and of every metadata file (a JSON metadata file "
          "holding only an error body such as {\"error\": \"...\"} counts).",
          "pyarrow (lerobot 0.4.4's `load_nested_dataset`, lrtool's loaders) raises ArrowInvalid, PyAV/torchcodec cannot open a video, `json.load` raises on metadata: the first access to that file fails (often an auth wall or a 429 body saved to disk).",
          "Re-download; check tokens and rate limits.",
          **manual("the file is an error page saved under a data name; the content is not on disk")),
    Check("F006", "empty-file", ERROR, "A referenced file is empty (0 bytes).",
          "Size of every referenced parquet and mp4 and of every metadata file.",
          "pyarrow raises ArrowInvalid (lerobot 0.4.4's `load_nested_dataset`, lrtool's loaders), the video decoder cannot open the file, and `json.load` raises JSONDecodeError for a metadata file: the first access fails.",
          "Re-download the file.",
          **manual("the file is empty; its content is not on disk")),
    Check("F007", "parquet-unreadable", ERROR, "A parquet file has no valid footer or cannot be opened.",
          "Each data parquet footer opens with pyarrow.",
          "pyarrow raises `Parquet magic bytes not found in footer` in lerobot 0.4.4's `load_nested_dataset` and in lrtool's loaders: recording ended without finalize() (docs/failure-modes.md#missing-footer).",
          "Re-download, or re-record the episode; the data is not recoverable mechanically.",
          **manual("the parquet file has no valid footer; its rows cannot be recovered mechanically")),
    Check("F008", "video-unreadable", ERROR, "A video container header cannot be read.",
          "The mp4 box structure (moov present, boxes within the file) and the PyAV header (no decode).",
          "Decode fails for every sample in that file: lerobot 0.4.4's `decode_video_frames` (src/lerobot/datasets/video_utils.py, torchcodec or PyAV) and lrtool's loaders cannot open it.",
          "Re-download or re-encode the file.",
          **manual("the video container cannot be read")),
    Check("F009", "video-codec-mismatch", WARNING, "A video stream differs from what info.json declares.",
          "Probed codec, pix_fmt, size and fps against features[key].info (video.codec, video.pix_fmt, shape, fps). "
          "The declaration describes episode 0's file only (docs/failure-modes.md#video-info-episode-0). A frame "
          "rate more than 1 % off info.json fps is F009's when the file's frame queries all land (the message then "
          "says so); when F020 reports the file (some queries fail, or its frames are unevenly spaced), F009 is "
          "silent on its rate (docs/video-timestamps.md#causes).",
          "GPU decode plans and transforms based on the declaration are wrong (e.g. AV1 files declared H.264 "
          "on an H100, whose NVDEC has no AV1).",
          "`lrtool repair` updates the declaration from the probed stream.",
          **_auto("fix_video_declarations", "video.codec / video.pix_fmt / video.fps / shape taken from the probed "
                                            "streams when every file agrees")),
    Check("F010", "video-duration", ERROR, "An episode's frame queries miss the frames of its mp4.",
          "Per episode and camera, every frame query lands on a frame of the file: lerobot decodes frame k of an "
          "episode at from_timestamp + k / fps (v2.x: k / fps in the episode's own file) and the file holds its "
          "sample count of frames at j / fps. An error when from_timestamp is off the frame grid by more than "
          "tolerance_s, when the last query is past the last frame, when an episode's frames overlap the "
          "previous episode's, when a file's first episode does not start at 0 or frames are skipped between "
          "segments, or when to_timestamp - from_timestamp is more than one frame off length / fps "
          "(docs/failure-modes.md (#merged-offsets, #short-video, #accumulated-durations)). Up to one frame off "
          "with every query landing is F012.",
          "lerobot 0.4.4 dataset_reader _query_videos -> decode_video_frames: torchcodec raises IndexError: Invalid "
          "frame index past the last frame, both backends raise FrameTimestampError for a query off the grid; "
          "overlapping segments silently return the previous episode's frames.",
          "Re-encode or re-concatenate the video, or correct the episode metadata. Segments that drifted off the "
          "frames of a v3.0 file holding exactly its episodes' frames are re-derived from the frames' timestamps by "
          "`lrtool repair` (docs/video-timestamps.md#repair).",
          **_auto("fix_segment_times", "v3.0 from/to_timestamp re-derived from the frames' timestamps when the file "
                                       "holds exactly its episodes' frames; otherwise a person decides")),
    Check("F011", "images-staging", WARNING, "An images/ staging folder is left in a finished dataset.",
          "images/ (PNG staging during recording) is absent or empty.",
          "A sign of an interrupted recording: episodes may be missing frames or videos (docs/failure-modes.md#missing-footer).",
          "Check the last episodes; delete images/ once the videos are complete.",
          **manual("staged images of an interrupted recording need a person to check")),
    Check("F012", "video-segment-convention", WARNING,
          "An episode's video segment is up to one frame longer or shorter than its frames.",
          "v3.0: to_timestamp - from_timestamp is more than half a frame but at most one frame off length / fps, "
          "while every frame query from_timestamp + k / fps lands on a frame of the file within tolerance_s (checked "
          "per episode, as F010 does). The message names the writer convention: to_timestamp at the last frame's "
          "timestamp, or the container duration of the episode's mp4 counting one frame more.",
          "The loaders read frames at from_timestamp + timestamp only (lerobot 0.4.4 _query_videos), so the "
          "dataset loads and decodes the right frames; tools that cut or concatenate files by to_timestamp "
          "(lerobot dataset_tools checks round(to * fps) - round(from * fps) == length) disagree by one frame.",
          "Nothing is needed to train; set to_timestamp = from_timestamp + length / fps if such a tool needs it.",
          **manual("a writer convention loaders accept; nothing to repair")),
    Check("F013", "symlink-out-of-dataset", WARNING,
          "A folder or file of the dataset is a symlink that leads outside the dataset.",
          "Every symlink below the dataset root (data/, videos/, meta/, a chunk folder, a file; .git left out), "
          "resolved: one that leads outside the dataset is reported. Links of a Hub snapshot into its "
          "repository's blobs/ folder stay inside and are not reported.",
          "The loaders open paths and follow the link (lerobot 0.4.4's `load_nested_dataset` and "
          "`decode_video_frames` read whatever the path resolves to), so the dataset loads, from files that are "
          "not this dataset's alone: another dataset's data/ linked in is read, and changed, as this one. lrtool "
          "checks the referenced files through the link but does not look there for unreferenced files, and "
          "`lrtool repair`, `repair --undo` and `reshard` refuse the dataset before changing a byte.",
          "Replace the link with a copy of what it points to (or run the tools on the dataset it points into).",
          **manual("a symlink out of the dataset: lrtool writes only inside the dataset; replace the link by a "
                    "copy")),
    Check("F020", "video-frame-times", ERROR, "A video's own frame timestamps are off the 1/fps grid.",
          "Every frame's presentation timestamp, read from the mp4's sample tables (stts, ctts, elst, mdhd/mvhd; "
          "tfdt/trun of a fragmented file with --all-videos) without decoding, against the grid k / fps from 0, and "
          "every frame query of the file's episodes (from_timestamp + timestamp; v2.x: timestamp) against the "
          "nearest real frame. Names the cause once per file: a start offset (an empty edit list, a fragmented "
          "file with B-frames and no edit list, a first fragment not at 0), dropped frames, duplicated frames, a "
          "variable frame rate, a time base that cannot hold 1 / fps (times rounded to it), another frame rate (F009 "
          "is then silent for the file), and the first query it breaks (episode, frame, distance). An error when a query misses by more than tolerance_s or lands on "
          "another frame than its own; a warning when every query still lands (docs/video-timestamps.md).",
          "lerobot 0.4.4 decode_video_frames (datasets/video_utils.py) takes the frame with the nearest timestamp "
          "and raises FrameTimestampError beyond tolerance_s (huggingface/lerobot#3177 and the issues in "
          "docs/failure-modes.md#timestamps); within it, a shifted file silently returns a neighbouring frame, or "
          "another episode's. Misses explained by the episode metadata are F010, by the timestamp column D003.",
          "Re-mux the file with frame times k / fps from 0 (or re-record it); a start offset can also be absorbed "
          "by the episode metadata by hand. `lrtool reencode` keeps every frame time, so it does not fix this.",
          **manual("the video's own frame times are wrong; the frames must be re-timed by re-muxing")),
    Check("F021", "tolerance-needed", INFO, "The smallest tolerance_s that makes every frame query land.",
          "Once per dataset, when some frame query misses at --tolerance-s: the smallest tolerance_s with which "
          "every query (real frame timestamps, the timestamp column with --deep) lands on its own frame, with the "
          "worst episode and camera, or that no value does because some query's nearest frame is another frame "
          "(docs/video-timestamps.md).",
          "lerobot's tolerance_s (LeRobotDataset, TrainPipelineConfig, default 1e-4 s) decides between "
          "FrameTimestampError and a returned frame; a value large enough to load may also return wrong frames.",
          "Fix the causes reported (F010, F020, D003); raising tolerance_s to the value given is a stop-gap when "
          "every query lands on its own frame.",
          **manual("a summary of the timestamp findings, not a defect of its own")),
    # ------------------------------------------------------------------ R: row groups
    Check("R001", "row-group-spans-episodes", WARNING, "A row group holds rows of several episodes.",
          "Per row group, episode_index min == max (footer statistics).",
          "`read_row_group(i)` no longer returns one episode: episode-sharded streaming must materialise whole "
          "files (docs/failure-modes.md#row-groups).",
          "`lrtool reshard` rewrites one episode per row group.",
          **_RESHARD),
    Check("R002", "row-group-oversize", WARNING, "A row group is far above the size limit.",
          "Uncompressed row-group size against 2 x --row-group-mb (default 32 MB).",
          "Readers materialise a whole row group: one giant group per file means every worker holds the whole "
          "file in memory (OOM).",
          "`lrtool reshard --row-group-mb 32`.",
          **_RESHARD),
    Check("R003", "page-index-missing", INFO, "A data file has no page index.",
          "Column and offset indexes in the footer (pyarrow write_page_index=True).",
          "Without it, readers cannot skip pages inside a row group for filtered or random reads.",
          "`lrtool reshard` writes it.",
          **_RESHARD),
    Check("R004", "uneven-shards", WARNING, "The shard count does not divide evenly across ranks.",
          "With --world-size N: files (the streaming shard unit of datasets) and row groups (the unit after "
          "IterableDataset.reshard()) against N.",
          "datasets' split_dataset_by_node falls back to every rank reading every shard and keeping one example "
          "in N: N times the I/O.",
          "`lrtool reshard` (one row group per episode) or choose a world size that divides the shard count.",
          **_RESHARD),
    # ------------------------------------------------------------------ G: statistics
    Check("G001", "stats-missing", WARNING, "meta/stats.json is missing or unreadable.",
          "v3.0 normalises with meta/stats.json (v2.1 aggregates episodes_stats.jsonl instead). For v2.1, a "
          "missing meta/episodes_stats.jsonl is an error: lerobot 0.3.3's load_metadata reads it for every "
          "dataset of codebase_version >= v2.1 (stats.json only for v2.0) and raises FileNotFoundError.",
          "Training without normalisation statistics fails in make_policy or normalises with garbage. A file that "
          "exists but cannot be parsed (truncated) is an error: lerobot's load_stats (lerobot 0.4.4 "
          "datasets/utils.py) parses any stats.json present and raises; a placeholder is F004-F006.",
          "Recompute the statistics (lerobot `recompute_stats`).",
          **manual("statistics have to be recomputed")),
    Check("G002", "stats-keys", WARNING, "stats.json describes features that are not declared.",
          "Top-level keys of stats.json are declared features.",
          "Stale keys after a feature was renamed or removed; normalisation keyed by name misses the new one.",
          "Recompute the statistics.",
          **manual("statistics have to be recomputed")),
    Check("G003", "stats-nonfinite", ERROR, "stats.json holds NaN or infinite values.",
          "Every numeric leaf of stats.json is finite.",
          "lerobot 0.4.4's normaliser (src/lerobot/processor/normalize_processor.py) uses the stored values as they are: a NaN/Inf statistic turns that dimension's normalised values into NaN, and one dataset poisons the aggregated statistics of a whole mixture (docs/failure-modes.md#non-finite-stats).",
          "Recompute the statistics for the feature named (`lrtool repair` recomputes numeric features).",
          **_auto("fix_stats", "non-finite numeric statistics recomputed from the data")),
    Check("G004", "stats-shape", ERROR, "A statistics entry is incomplete or its shape does not match the feature.",
          "Every stats.json / per-episode entry of a declared feature has min, max, mean, std and count as "
          "rectangular numeric lists; count has shape (1,); the others the feature's shape (a rank >= 2 feature "
          "may have (shape[-1],), as lerobot 0.4 writes) or (3, 1, 1) for a camera, one shape for all of them; "
          "every normalised feature "
          "(observation.*, action*) has an entry in stats.json (lerobot 0.4.4 compute_stats.py).",
          "lerobot's aggregate_stats raises ValueError for a count not of shape (1,) or camera stats not (3, 1, 1) "
          "(at load for v2.1); in normalisation a wrong-length mean raises a broadcast RuntimeError on the first "
          "batch, a (1,) mean is silently applied to every dimension, and a feature without stats is silently "
          "left unnormalised (normalize_processor skips it); camera statistics of shape (3,) do not broadcast over "
          "a (B, 3, H, W) batch. Per-episode entries are warnings, except v2.1's, which lerobot 0.3.3 aggregates "
          "at load (errors). A problem of count alone is a warning: only aggregate_stats reads count (merging, "
          "recording more episodes), never loading.",
          "Recompute the statistics (`lrtool repair` recomputes numeric features from the data).",
          **_auto("fix_stats", "misshapen or incomplete numeric statistics recomputed from the data")),
    Check("G005", "stats-inconsistent", ERROR, "A statistics entry contradicts itself.",
          "Per dimension: min <= mean <= max, std >= 0, camera statistics within [0, 1], and std possible for "
          "count values spanning [min, max]: at least (max-min)/sqrt(2 count), at most (max-min)/2 "
          "(sample-std convention allowed); float32 slack, and the rounding of lerobot 0.4's float32 "
          "E[x^2]-E[x]^2 (a stored variance within 16 (log2 n + 2) eps_float32 max|x|^2 of the bound, and within "
          "2x of it; any such noise on a constant dimension, whose hazard is G009). "
          "Camera std is exempt from the lower bound: lerobot 0.4.x "
          "squares uint8 pixels before widening them and stores a per-episode camera std of ~0, which lerobot's "
          "training replaces with ImageNet statistics by default (use_imagenet_stats).",
          "Normalisation uses a value that cannot describe the data: a stored std of 0 for a dimension that varies "
          "makes MEAN_STD divide by 1e-8 and that dimension explode for the whole run (lerobot 0.4's float32 "
          "E[x^2]-E[x]^2 produces exactly this when |mean| >> std). Errors for the statistics training normalises "
          "with (stats.json) of a feature lerobot policies normalise (observation.*, action*; the message says "
          "when it is a warning because the feature is not), warnings for per-episode entries (they reach "
          "training through aggregation) and a v2.1 stats.json.",
          "Recompute the statistics (`lrtool repair` after `lrtool validate --deep` confirms them wrong).",
          **_auto("fix_stats", "self-contradicting numeric statistics recomputed from the data where they "
                               "disagree with it")),
    Check("G006", "stats-quantile-order", ERROR, "Stored quantiles are out of order.",
          "Per dimension min <= q01 <= q10 <= q50 <= q90 <= q99 <= max, within one bin of lerobot's 5000-bin "
          "quantile histogram (lerobot 0.4.4 RunningQuantileStats).",
          "lerobot 0.4.4's QUANTILES / QUANTILE10 normalisation (src/lerobot/processor/normalize_processor.py) divides by q99-q01 / q90-q10: an inverted pair flips the sign of "
          "that dimension, an equal pair scales it by 1e8. Per-episode entries are warnings.",
          "Recompute the statistics.",
          **_auto("fix_stats", "numeric quantiles out of order recomputed from the data")),
    Check("G007", "stats-count", WARNING, "A statistics count differs from the frames it describes.",
          "Per-episode count of a numeric feature == the episode's length; without per-episode statistics "
          "(v2.0), stats.json count == total_frames. Camera counts are not checked (lerobot counts sampled "
          "frames, or pixels when it encodes while recording).",
          "aggregate_stats weights each episode by its count: the mean and std lerobot aggregates (v2.1 at load; "
          "v3.0 when merging, splitting or deleting episodes) lean towards the miscounted episode.",
          "Recompute the statistics (`lrtool repair`).",
          **_auto("fix_stats", "per-episode counts set to the episode lengths (the other statistics checked "
                               "against the data)")),
    Check("G008", "stats-stale", WARNING, "meta/stats.json disagrees with the per-episode statistics.",
          "stats.json against lerobot's aggregate of the per-episode statistics (count-weighted mean, min of "
          "mins, max of maxes, pooled std, summed count; relative tolerance 1e-4), for features whose every "
          "per-episode entry is sound; each episode weighted by its length. Quantiles are not compared (lerobot "
          "versions aggregate them differently).",
          "v3.0 trains with stats.json: after episodes were removed or added by a tool that did not re-aggregate, "
          "the normalisation describes other data than the dataset holds. A v2.1 stats.json is ignored by "
          "lerobot 0.3 but read by other tools.",
          "Re-aggregate the statistics (`lrtool repair`).",
          **_auto("fix_stats", "stats.json re-aggregated from the per-episode statistics as lerobot's "
                               "aggregate_stats")),
    Check("G009", "stats-constant-dimension", WARNING, "A normalised dimension has no spread.",
          "For observation.* and action* features: dimensions whose stored max == min (per episode: info; in "
          "the statistics training uses: warning). A stats entry with std 0 but max > min is G005 instead.",
          "Not a defect of the statistics but a normalisation hazard: MEAN_STD divides by std + 1e-8 and MIN_MAX "
          "substitutes 1e-8 for max - min (lerobot 0.4.4 normalize_processor), so a deployment value that "
          "differs from the constant is scaled by ~1e8.",
          "Drop the dimension, or override its normalisation (IDENTITY), or record data where it varies.",
          **manual("the constant dimension is in the data, not a wrong statistic")),
    Check("G010", "stats-mismatch", WARNING, "Stored statistics disagree with the data.",
          "With --deep, per episode and per numeric feature, min/max/mean/std (and stored quantiles) recomputed "
          "from the data in float64 in the deep pass's single streaming read, and the statistics training uses "
          "(stats.json; the v2.1 aggregate) against the whole data. Tolerance per dimension: min/max to the "
          "float rounding of the stored dtype; mean within 1 % of the std plus 16 sqrt(n) eps_float32 x max|x|; "
          "std within 1 % of the population or the sample std plus eps x max|x|, or a variance within the rounding "
          "of lerobot's float32 one-pass formula and within 2x (any such noise on a constant dimension); float64 "
          "data is held to float32 resolution (writers store float32 statistics); a quantile must sit at its "
          "rank +-1 within one histogram bin. Camera statistics are not recomputed.",
          "Normalisation with wrong statistics silently rescales or shifts every input of that dimension. Error "
          "when the statistics training uses are off by a factor of 2 or more in std, or by more than one std "
          "in mean, for a feature lerobot policies normalise (the G005 the data explains is withdrawn and its "
          "severity kept); warning otherwise, and the message says when the feature is not normalised.",
          "`lrtool repair` recomputes the wrong entries from the data as lerobot does and re-aggregates "
          "stats.json.",
          deep=True, **_auto("fix_stats", "numeric statistics that disagree with the data recomputed from it, "
                                          "stats.json re-aggregated")),
    *ACROSS_DATASETS_CHECKS,
]

CATALOGUE: dict[str, Check] = {c.id: c for c in _CHECKS}
FAMILIES = {
    "M": "targets and mixtures", "I": "info.json", "S": "schema drift", "T": "tasks", "C": "counts and indices",
    "D": "deep (row level, --deep)", "F": "files", "R": "row groups", "G": "statistics",
    "X": "mixture compatibility (mixture files)",
    "Q": "episode content (curation; --deep, --camera-frames)", "L": "ledger and licence (decide before downloading)",
}


def get(check_id: str) -> Check:
    """The catalogue entry for ``check_id``.

    Raises:
        KeyError: unknown ID.
    """
    return CATALOGUE[check_id]


def expand_selection(spec: list[str] | None) -> set[str] | None:
    """Expand ``--select``/``--ignore`` values (IDs or prefixes such as ``S`` or ``R00``, comma separated).

    Returns None when ``spec`` is empty (meaning "no restriction").

    Raises:
        ValueError: a value matches no check ID.
    """
    if not spec:
        return None
    out: set[str] = set()
    for item in spec:
        for part in item.split(","):
            part = part.strip().upper()
            if not part:
                continue
            matched = {cid for cid in CATALOGUE if cid.startswith(part)}
            if not matched:
                raise ValueError(f"unknown check ID or prefix {part!r}")
            out |= matched
    return out


def markdown() -> str:
    """The catalogue as Markdown (the source of docs/checks.md)."""
    lines = ["# lrtool check catalogue", "",
             "Generated by `lrtool checks --format markdown`; do not edit by hand.", "",
             "| ID | name | severity | summary |", "|---|---|---|---|"]
    for c in _CHECKS:
        lines.append(f"| [{c.id}](#{c.id.lower()}) | {c.name} | {c.severity} | {c.title}{' (--deep)' if c.deep else ''} |")
    current = None
    for c in _CHECKS:
        fam = c.id[0]
        if fam != current:
            current = fam
            lines += ["", f"## {fam}: {FAMILIES[fam]}"]
        lines += ["", f"### {c.id}", "", f"**{c.name}** ({c.severity}{', --deep only' if c.deep else ''}): {c.title}", "",
                  f"- **What:** {c.what}", f"- **Why it breaks training:** {c.why}", f"- **How to fix:** {c.fix}"]
    return "\n".join(lines) + "\n"
