"""The check catalogue's families X (mixture compatibility), Q (episode content, for curation) and L (the episode
ledger and the licence, before download): the checks that look across episodes or datasets rather than at one
file. Part of :mod:`lerobot_tools.checks.catalogue`, which lists them after the others (see its docstring).
"""

from __future__ import annotations

from lerobot_tools.checks.check import MIXTURE_REPAIR as _MIXTURE, Check, manual
from lerobot_tools.findings import ERROR, INFO, WARNING

ACROSS_DATASETS_CHECKS = [
    # ------------------------------------------------------------------ X: mixture compatibility
    Check("X001", "mixture-role-missing", ERROR, "A dataset lacks a feature the mixture's name mapping asks for.",
          "Mixture files only. Roles named by any entry's `data_features_name_mapping` (e.g. `camera1`, `actions`) "
          "against each dataset's features after its own mapping (docs/mixtures.md).",
          "`default_collate` keys a batch by its first sample and raises KeyError on a sample without the role; "
          "lrtool's MixtureDataset refuses the mixture at construction.",
          "Map the role in that entry's data_features_name_mapping, or drop the role from the other entries.",
          **_MIXTURE),
    Check("X002", "mixture-feature-dropped", WARNING, "A feature only some datasets provide is left out of batches.",
          "Mixture files only. Feature names (after mapping) that not every dataset provides and no mapping asks for; "
          "reported on the minority side (the few that have it, or the few that lack it).",
          "Loads, but silently: a mixture batch holds only the names every dataset provides, so e.g. a wrist camera "
          "present in 399 of 400 datasets never reaches the model.",
          "Map the feature to a common role in every entry, or accept the drop.",
          **_MIXTURE),
    Check("X003", "mixture-feature-type", ERROR, "Datasets give a common feature different shapes, kinds or dtypes.",
          "Mixture files only. For every name all datasets provide: kind (numeric, camera, string), the shape a "
          "sample carries and the numeric dtype, compared with the majority. Different numeric dtypes alone are a "
          "warning.",
          "torch's `default_collate` calls `torch.stack`, which raises on different shapes (action of 14 floats beside 16). Different numeric "
          "dtypes stack silently: promoted in the main process, cast to the first sample's dtype in a DataLoader "
          "worker, so batches change dtype with their mix.",
          "Pad or slice to one shape (OpenTau pads state/action to max_*_dim), or map the role to a matching feature.",
          **_MIXTURE),
    Check("X004", "mixture-camera-resolution", ERROR, "A camera has a different resolution in some datasets.",
          "Mixture files only. For every camera name all datasets provide: channels, height and width as samples "
          "carry them (CxHxW from the declared shape and names).",
          "torch's `default_collate` cannot stack frames of different sizes (RuntimeError: stack expects each tensor to be equal size) "
          "unless a transform resizes every frame first.",
          "Resize in the dataset transform before collate, or re-encode the videos to one resolution.",
          **_MIXTURE),
    Check("X005", "mixture-fps", WARNING, "Datasets have different fps and the mixture sets no action_freq.",
          "Mixture files only. info.json fps of every dataset, when the mixture has no `action_freq`.",
          "Loads, but `delta_timestamps` windows cover different numbers of frames, offsets that are not multiples "
          "of every 1/fps raise ValueError at construction, and action chunks mix control rates.",
          "Set `dataset_mixture.action_freq` to the rate to train at, or resample the datasets.",
          **_MIXTURE),
    Check("X006", "mixture-resample", INFO, "A dataset is resampled to the mixture's action_freq.",
          "Mixture files only, with `action_freq`: each dataset whose fps differs, the factor, and whether its "
          "timestamps allow resampling by time. Raised as a warning when its timestamps are off the frame grid "
          "(D003, --deep) or when it is upsampled (frames repeat).",
          "Resampling picks the frame nearest each time on the action_freq grid: wrong frames when timestamps are "
          "not frame_index/fps; held, never-commanded actions when upsampling.",
          "Nothing when downsampling regular data; otherwise fix the timestamps or lower action_freq.",
          **_MIXTURE),
    Check("X007", "mixture-codebase-versions", INFO, "The mixture mixes codebase versions (v2.1 beside v3.0).",
          "Mixture files only. codebase_version of every dataset; reported on the minority version.",
          "lrtool's and OpenTau's loaders read both; upstream lerobot >= 0.4 reads v3.0 only and raises "
          "BackwardCompatibilityError on a v2.1 dataset.",
          "Nothing for lrtool/OpenTau; convert with lerobot's convert_dataset_v21_to_v30 for upstream lerobot.",
          **_MIXTURE),
    Check("X008", "mixture-stats", ERROR, "A dataset has no usable statistics for a feature the mixture normalises.",
          "Mixture files only. For every common numeric (non-index) and camera feature: the dataset's statistics "
          "(meta/stats.json, or v2.1 episodes_stats.jsonl) hold mean/std/min/max under its own column, with one "
          "value per element of the feature.",
          "OpenTau converts every dataset's stats to the mixture's names and raises KeyError for a missing key or "
          "statistic; a mean of another length fails to broadcast in normalisation.",
          "Recompute the dataset's statistics (lerobot `recompute_stats`).",
          **_MIXTURE),
    Check("X009", "mixture-prompt-substitutions", ERROR, "prompt_substitutions names a task the dataset does not have.",
          "Mixture files only. Keys of an entry's OpenTau `prompt_substitutions` against the dataset's task strings, "
          "exactly; near misses (case, whitespace) are named.",
          "OpenTau raises ValueError for a key that is not an on-disk task string (docs/failure-modes.md#prompt-substitutions).",
          "Copy the task string exactly from the dataset's task table.",
          **_MIXTURE),
    Check("X010", "mixture-task-spelling", INFO, "One task is spelled differently in different datasets.",
          "Mixture files only. Task strings equal after Unicode normalisation, case folding and whitespace collapsing "
          "but not byte for byte; reported on the minority spelling.",
          "The language model sees two prompts for one task; task-conditioned sampling or evaluation splits them.",
          "Rename the task (lerobot `modify_tasks`) or map it with prompt_substitutions.",
          **_MIXTURE),
    Check("X011", "mixture-weights", WARNING, "A dataset has sampling weight 0 (or every dataset does).",
          "Mixture files with weights (`weight=` lines, OpenTau `dataset_mixture.weights`). Raised as an error when "
          "every weight is 0.",
          "A dataset with weight 0 is listed but never drawn; with every weight 0 OpenTau's sampler raises ValueError "
          "and lrtool's MixtureDataset refuses the mixture.",
          "Give the dataset a weight or remove it from the mixture.",
          **_MIXTURE),
    Check("X012", "mixture-cameras-lost", ERROR, "The mixture's batches lose every camera a dataset provides.",
          "Mixture files only. A dataset with camera features (video or image, after its name mapping) none of "
          "which is common to every dataset of the mixture: the common sample schema (the names every dataset "
          "provides) then holds none of its cameras. Reported on each such dataset, naming the datasets that lack "
          "its cameras.",
          "Silently reads wrong data: a mixture batch holds only the names every dataset provides "
          "(`default_collate` takes the keys of a batch's first sample; lrtool's `MixtureDataset` and OpenTau's "
          "mixture keep the common keys, lerobot_tools/dataset/mixture_schema.py), so the whole run trains without "
          "the images this dataset was recorded with, and nothing fails.",
          "Map one camera of every dataset to a common role (`data_features_name_mapping`, e.g. `camera0`), or "
          "train the datasets without cameras in a separate mixture.",
          **_MIXTURE),
    # ------------------------------------------------------------------ Q: episode content (curation)
    Check("Q001", "episode-frozen", WARNING, "An episode's action and state never change.",
          "With --deep, every action* and observation* dimension of shape [d] (docs/curation.md#columns): its "
          "range in the episode is at most `frozen_rel` (0.5 %) of the dimension's typical range (the median over "
          "the dataset's episodes; any range when that is 0).",
          "It loads, so the loader does not fail (a warning, not an error), but a policy trained on it learns to "
          "stand still: a follower unplugged or a logger replaying its last reading. The keep-list leaves it out. "
          "Thresholds: `--threshold NAME=VALUE` (docs/curation.md#thresholds).",
          "Leave the episode out (`lrtool validate --deep --write-keep keep.txt`), or re-record it.",
          deep=True, **manual("the recorded content is wrong; a keep-list leaves the episode out")),
    Check("Q002", "dimension-stuck", INFO, "One dimension stays still in an episode while the others move.",
          "With --deep and at least 5 episodes: a dimension whose range in the episode is below `frozen_rel` of "
          "its typical range although it moves in at least 80 % of the dataset's episodes.",
          "A stuck joint or a dead sensor channel in that episode; it can also be a task that does not need the "
          "joint, so it is information (on 12 real datasets: 6 of 50 episodes of one bimanual dataset, each a "
          "single wrist or elbow).",
          "Look at the episode; exclude it with `--exclude Q002` when the joint is broken.",
          deep=True, **manual("the recorded content; a keep-list can leave the episode out")),
    Check("Q003", "episode-idle-ends", INFO, "An episode starts or ends with still frames that can be trimmed.",
          "With --deep: the frames at the start (end) whose every action and state dimension stays within "
          "`idle_rel` (2 %) of its range in the episode from the first (last) frame, reported from `idle_s` "
          "(1 s) on, as trimmable frame ranges.",
          "Padding teaches the policy to wait (openpi's DROID training drops idle ranges for this reason, "
          "examples/droid/README_train.md). It loads fine: information.",
          "`--write-keep` records the ranges (`trim=`); `FrameDataset(trim=...)` / `MixtureDataset(trim=True)` "
          "leave those frames out; no file is rewritten.",
          deep=True, **manual("recorded as trimmable frames in a keep-list, never rewritten")),
    Check("Q004", "episode-spike", WARNING, "A dimension jumps far beyond the episode's step sizes.",
          "With --deep: the largest step |x[t+1] - x[t]| of a dimension exceeds `spike_k` (10) times the "
          "episode's robust step scale (the larger of the 95th percentile of its steps and the mean of its "
          "non-zero steps), `spike_range` (0.5) of the dimension's typical range and 5 times the median over the "
          "episodes of their largest step of that dimension (with fewer than 5 episodes, where that median means "
          "little: 1.5 x `spike_k` instead). From the stored statistics (v3.0 quantiles) on a copy without its "
          "data: a few frames more than one typical range beyond the episode's 1st-99th percentiles.",
          "A dropout, an encoder wrap or a tracking jump: wrong targets for those frames, inflated statistics. It "
          "loads, so a warning.",
          "Leave the episode out, or fix the recording.",
          deep=True, **manual("the recorded content; a keep-list leaves the episode out")),
    Check("Q005", "episode-non-finite", WARNING, "An episode's action or state holds NaN or infinite values.",
          "With --deep: every value of the action* and observation* columns is finite.",
          "The loader reads the values as stored (no error), but normalisation and the loss turn NaN: the run "
          "diverges at the first batch holding one.",
          "Leave the episode out, or fix the recording.",
          deep=True, **manual("the recorded content; a keep-list leaves the episode out")),
    Check("Q006", "dimension-pinned", INFO, "A dimension sits at the dataset's observed limit for a long run.",
          "With --deep: a moving dimension (grippers and hands excepted, by name) stays at the dataset's "
          "minimum or maximum of that dimension for at least `pinned_s` (2 s) and half of the episode.",
          "Clipping or saturation biases the targets; holding a joint at its limit can also be the task, so it is "
          "information.",
          "Check the robot's limits and the teleoperation scaling.",
          deep=True, **manual("the recorded content")),
    Check("Q007", "action-state-lag", WARNING, "An episode's actions and states are out of step.",
          "With --deep and at least 5 episodes whose actions track the state: the shift k (within "
          "+-15 frames) maximising the correlation of the action's velocity at t with the state's at t + k "
          "differs from the dataset's median shift by more than `lag_frames` (4), with a correlation of at "
          "least 0.3 that beats the one at the median shift by 0.1.",
          "Observations are paired with the actions of another moment (a clock or buffering fault): the policy "
          "learns the wrong reaction. It loads: a warning.",
          "Leave the episode out, or re-align its timestamps at the source.",
          deep=True, **manual("the recorded content; a keep-list leaves the episode out")),
    Check("Q008", "episode-shorter-than-chunk", INFO, "An episode is shorter than a policy's action chunk.",
          "Episode length (metadata) against --chunk-size (default 50: pi0, pi0.5 and SmolVLA's chunk_size in "
          "lerobot's policies/*/configuration_*.py; ACT uses 100, GR00T 40).",
          "lerobot does not drop it: targets past the episode's end are clamped to its last frame and marked "
          "`action_is_pad` (dataset_reader `_get_query_indices`); ACT masks them, Diffusion's "
          "`do_mask_loss_for_padding` is False by default, so it trains on repeated last actions. Information.",
          "Use a smaller chunk, or exclude short episodes with `--exclude Q008`.",
          **manual("the episode's length")),
    Check("Q009", "episode-duplicate", WARNING, "An episode duplicates another episode of the dataset.",
          "With --deep: equal signatures (values rounded to 4 decimals, BLAKE2b) or near duplicates (16 points per "
          "dimension scaled to its range within `near_duplicate` (0.01) RMS, means and ranges within the same "
          "share, lengths within 10 %); the lowest-numbered episode of a group is kept.",
          "The copy weighs twice in training and leaks between train and evaluation splits. It loads: a warning.",
          "Leave the copies out (the keep-list does).",
          deep=True, **manual("the recorded content; a keep-list leaves the copies out")),
    Check("Q010", "episode-duplicate-across", WARNING, "An episode duplicates an episode of another dataset of the "
          "mixture.",
          "Mixture files with --deep: the signatures of Q009 compared across every dataset of the mixture (same "
          "number of action/state dimensions); the episode of the earlier mixture entry is kept.",
          "The same demonstration published twice is sampled twice as often; evaluation on one dataset leaks "
          "training data of the other. A warning.",
          "Drop one copy (the keep-list does).",
          deep=True, **_MIXTURE),
    Check("Q011", "camera-black", WARNING, "A camera is black or covered in an episode.",
          "With --camera-frames N (decoded frames sampled per episode and camera): at least half of the sampled "
          "frames have a mean grey level below 12 of 255 or a standard deviation below 2 (rdq 0.3.4's "
          "BLACK_MEAN and FLAT_STD). On a copy without its videos: per-episode image mean < 0.05 and std < 0.01 in "
          "the stored statistics.",
          "No visual evidence: the policy learns to act blind. The decoder reads the frames fine: a warning.",
          "Leave the episode out, or check the camera.",
          **manual("the recorded content; a keep-list leaves the episode out")),
    Check("Q012", "camera-overexposed", WARNING, "A camera is overexposed (washed out) in an episode.",
          "With --camera-frames N: at least half of the sampled frames have a mean grey level above 235 with a "
          "standard deviation below 10 (rdq 0.3.4 --video-full). On a copy without its videos: per-episode image "
          "mean > 0.92 and std < 0.04.",
          "No visual evidence, as Q011. A warning.",
          "Leave the episode out, or fix the exposure.",
          **manual("the recorded content; a keep-list leaves the episode out")),
    Check("Q013", "camera-frozen", WARNING, "A camera's picture does not change while the robot moves.",
          "With --camera-frames N: every pair of consecutive sampled frames differs by a mean absolute grey "
          "difference below 0.5 (rdq 0.3.4's FROZEN_DIFF) while the episode's state moves (not Q001).",
          "A stalled camera feed: the policy sees one picture for the whole episode. A warning.",
          "Leave the episode out, or fix the capture pipeline.",
          **manual("the recorded content; a keep-list leaves the episode out")),
    Check("Q014", "camera-duplicate-stream", WARNING, "Two camera keys hold the same pictures.",
          "With --camera-frames N: the sampled frames of two video keys are equal (mean absolute difference "
          "below 0.5 grey levels) in an episode; reported once for the dataset when it holds in every sampled "
          "episode. On a copy without its videos: equal per-episode image statistics of two keys.",
          "One device recorded twice, or a key mapped to the wrong camera: a view the policy expects is missing. "
          "A warning.",
          "Map the key to the right camera; for single episodes, leave them out.",
          **manual("the recorded content; a keep-list leaves the episode out")),
    # ------------------------------------------------------------------ L: ledger and licence (before download)
    Check("L001", "episode-ledger", WARNING, "The v3.0 episode ledger shows the file-boundary signature of a "
          "faulty conversion.",
          "v3.0 `meta/episodes` data/chunk_index and data/file_index of consecutive episodes never go back; "
          "with a data file's footer on disk: its row count equals the lengths of the episodes the "
          "ledger places in it, else the signature of lerobot's v2.1->v3.0 converter bug (huggingface/lerobot#2401: "
          "the first episode of every file after the first is recorded in the file before) is named.",
          "lerobot 0.4.4 loads every data file, so training reads the rows (a warning), but every tool that "
          "follows the ledger to a file (an episode-subset download, `lrtool prefetch KEEP`, "
          "`dataset_tools` edits) reads the wrong file for the boundary episodes.",
          "Re-convert with a lerobot release after the fix (0d1be72dc), or fix data/chunk_index and file_index.",
          **manual("the episode metadata needs the data files' row counts to be rewritten")),
    Check("L002", "license-missing", INFO, "The dataset card states no license.",
          "README.md front matter (the Hub dataset card's YAML) `license:`; absent, `other` or `unknown`, and no "
          "licence file (LICENSE, LICENSE.md, COPYING, ...) beside the card.",
          "Nothing breaks; whoever trains on it cannot tell under which terms. Information.",
          "Ask the owner, or add `license:` to the card.",
          **manual("the dataset card")),
    Check("L003", "license-conflict", WARNING, "A mixture combines licenses whose terms conflict.",
          "Mixture files: the datasets' card licenses (L002) grouped by their terms: non-commercial (cc-by-nc-*), "
          "no-derivatives (*-nd-*), share-alike families (cc-by-sa-*, gpl-*/agpl-*/lgpl-*, odbl, cdla-sharing) "
          "and unstated. Reported, never judged legally: non-commercial or no-derivatives terms beside any other, "
          "or two different share-alike families.",
          "Nothing breaks at load time; the terms of one dataset may not allow what the others' allow for the "
          "trained model. A warning for a person to decide.",
          "Check each dataset's terms with whoever decides; drop or replace the datasets concerned.",
          **_MIXTURE),
]
