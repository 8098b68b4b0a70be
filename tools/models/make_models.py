#!/usr/bin/python3
"""Writes the real-model test set as ONNX, each with an input and torch's output.

Random weights with a fixed seed (no downloads): resnet18, resnet50,
mobilenet_v2, mobilenet_v3_small, squeezenet1_1, shufflenet_v2_x1_0,
efficientnet_b0 (1x3x224x224), a 4-layer transformer encoder (seq 128,
d_model 256, 4 heads) and vit_small, torchvision's VisionTransformer (the
architecture and export of vit_b_16: patch Conv, class token through
ConstantOfShape/Expand, encoder, head) at 4 layers, hidden 192, 3 heads,
1x3x224x224 in 16x16 patches; vit_b_16 itself is written when named
(330 MB). Uses Debian's python3-torch and python3-torchvision.

usage: make_models.py OUT_DIR [NAME ...]
writes OUT_DIR/NAME.onnx, OUT_DIR/NAME.input.npy, OUT_DIR/NAME.output.npy
"""
import inspect
import os
import sys

import numpy as np
import torch
import torchvision

CNNS = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "squeezenet1_1",
        "shufflenet_v2_x1_0", "efficientnet_b0"]
ALL = CNNS + ["transformer_encoder", "vit_small"]


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024,
                                                 dropout=0.0, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)
        # The layers are deep copies of one: give each its own weights.
        for p in self.parameters():
            if p.dim() > 1:
                torch.nn.init.xavier_uniform_(p)
            else:
                torch.nn.init.uniform_(p, -0.1, 0.1)

    def forward(self, x):
        return self.encoder(x)


def build(name):
    torch.manual_seed(0)
    if name == "transformer_encoder":
        return Encoder().eval(), torch.randn(1, 128, 256)
    if name == "vit_small":
        model = torchvision.models.VisionTransformer(image_size=224, patch_size=16, num_layers=4, num_heads=3,
                                                     hidden_dim=192, mlp_dim=768).eval()
    elif name == "vit_b_16":
        model = torchvision.models.vit_b_16(weights=None).eval()
    if name.startswith("vit"):
        # torchvision zero-initializes the head and the class token: random
        # ones, so that the output says something.
        with torch.no_grad():
            for p in model.parameters():
                if not p.any():
                    p.normal_(0, 0.02)
        return model, torch.randn(1, 3, 224, 224)
    model = getattr(torchvision.models, name)(weights=None).eval()
    # Random init leaves BatchNorm at identity statistics; give it real ones
    # so folding and normalization are exercised.
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    return model, torch.randn(1, 3, 224, 224)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    out = sys.argv[1]
    names = sys.argv[2:] or ALL
    os.makedirs(out, exist_ok=True)
    for name in names:
        path = os.path.join(out, name + ".onnx")
        if os.path.exists(path) and os.path.exists(os.path.join(out, name + ".output.npy")):
            print(f"{name}: up to date")
            continue
        model, x = build(name)
        with torch.no_grad():
            y = model(x)
        # Exported with autograd on: under no_grad, TransformerEncoderLayer
        # takes a fused fast path that has no ONNX export.
        # The TorchScript exporter (torch >= 2.9 defaults to the dynamo one,
        # whose graphs differ): the same ONNX from every torch version.
        legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
        # Opset 13, or 14 where this torch has no opset-13 form of an op (torch
        # 2.11 exports the transformer's attention as scaled_dot_product_attention).
        for opset in (13, 14):
            try:
                torch.onnx.export(model, x, path, input_names=["input"], output_names=["output"],
                                  opset_version=opset, do_constant_folding=True, **legacy)
                break
            except torch.onnx.errors.UnsupportedOperatorError:
                if opset == 14:
                    raise
        np.save(os.path.join(out, name + ".input.npy"), x.numpy())
        np.save(os.path.join(out, name + ".output.npy"), y.numpy())
        print(f"{name}: wrote {path} ({os.path.getsize(path) / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
