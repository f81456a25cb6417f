"""A PyTorch twin of :class:`sandbox.nn.UNet`; lives in ``sandbox.bench._torch_twin`` (used by
``sandbox bench``) and is re-exported here for the parity tests."""

from sandbox.bench._torch_twin import build_torch_unet, copy_weights_to_torch  # noqa: F401
