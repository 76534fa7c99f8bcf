"""Tests of lerobot_tools.loaders (FrameDataset, MixtureDataset, the sampler, the stream), under torch.distributed
too."""
