"""Build the PyTorch-exported ONNX test model of tests/models/onnx (issue 36): a small PyTorch network,
exported with ``torch.onnx.export`` as PyTorch users export.

    python3 scripts/torch_models.py [--venv DIR] [--out tests/models/onnx]

The network (fixed seed, eval mode, batch size 1, 3x32x32 input) uses the layers PyTorch users deploy
on microcontrollers: Conv2d + BatchNorm2d + ReLU, a depthwise Conv2d with Hardswish, LeakyReLU,
nn.Upsample (nearest) and a ConvTranspose2d, Hardsigmoid, AdaptiveAvgPool2d, Flatten, Linear.
``torch.onnx.export`` (its default exporter, opset 18) writes ``torch_cnn_float32.onnx``.

Run with a Python that has no torch, the script creates a virtual environment of its own (by default
~/.cache/microcompiler/torch-venv), installs the pinned CPU build of torch, ``onnx`` and ``onnxscript``
(the exporter's dependency) from the package registry into it, and runs itself there. torch is not a
test dependency: the tests read the committed file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tool_venv import ensure_venv  # noqa: E402

REQUIREMENTS = ["torch==2.13.0+cpu", "onnx==1.23.2", "onnxscript==0.7.2"]
DEFAULT_VENV = Path.home() / ".cache" / "microcompiler" / "torch-venv"
OUT = Path(__file__).resolve().parents[1] / "tests" / "models" / "onnx"


def network():
    import torch
    from torch import nn

    torch.manual_seed(36)

    class TorchCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8), nn.ReLU())
            self.depthwise = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.Hardswish())
            self.pointwise = nn.Sequential(nn.Conv2d(8, 16, 1), nn.LeakyReLU(0.1))
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.down = nn.Conv2d(16, 8, 3, stride=2, padding=1)
            self.deconv = nn.ConvTranspose2d(8, 4, 2, stride=2)
            self.gate = nn.Hardsigmoid()
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.head = nn.Linear(4, 10)

        def forward(self, x):
            x = self.pointwise(self.depthwise(self.stem(x)))
            x = self.deconv(self.down(self.up(x)))
            x = self.pool(x * self.gate(x)).flatten(1)
            return self.head(x)

    model = TorchCNN().eval()
    with torch.no_grad():  # BatchNorm statistics that are not the identity
        bn = model.stem[1]
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
    return model


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    ensure_venv(args.venv, REQUIREMENTS, ["torch", "onnx", "onnxscript"], __file__)
    import onnx
    import torch

    path = args.out / "torch_cnn_float32.onnx"
    model = network()
    torch.onnx.export(
        model,
        (torch.randn(1, 3, 32, 32),),
        str(path),
        input_names=["input"],
        output_names=["logits"],
        external_data=False,
    )
    proto = onnx.load(path)
    onnx.checker.check_model(proto, full_check=True)
    kinds = sorted({n.op_type for n in proto.graph.node})
    print(f"{path.name}: torch {torch.__version__}, opset {proto.opset_import[0].version}, {', '.join(kinds)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
