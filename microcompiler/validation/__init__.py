"""``microcompiler validate``: the model on the device against TFLite Micro and the float model."""

from microcompiler.validation.runner import DeviceOptions, Sample, validate

__all__ = ["DeviceOptions", "Sample", "validate"]
