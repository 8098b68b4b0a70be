#!/usr/bin/python3
"""Rewrites an ONNX model to compute in float16, as half-precision exports
are: float initializers, Constant values, graph inputs, outputs and
value_info become float16, and Casts to float become Casts to float16.

usage: onnx_to_fp16.py IN.onnx OUT.onnx
With --test-model DIR: writes DIR/cnn.onnx (a small float32 CNN from torch:
conv, batchnorm, residual add, depthwise conv, pooling, a linear layer and
softmax), DIR/cnn_fp16.onnx (the same, float16) and DIR/cnn.input.npy, for
tests/convert/fp16_models_test.cpp.
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper, TensorProto


def to_fp16(model):
    g = model.graph

    def retype(vi):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT16

    def half(t):
        if t.data_type == TensorProto.FLOAT:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))

    for init in g.initializer:
        half(init)
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        retype(vi)
    for node in g.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                half(a.t)
            if node.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.FLOAT16
    return model


def test_model(out):
    import torch
    from torch import nn

    class Cnn(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
            self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
            self.pw = nn.Conv2d(16, 16, 1)
            self.head = nn.Linear(16, 10)

        def forward(self, x):
            y = self.stem(x)
            y = torch.relu(y + self.pw(self.dw(y)))
            y = nn.functional.adaptive_avg_pool2d(nn.functional.max_pool2d(y, 2), 1).flatten(1)
            return torch.softmax(self.head(y), dim=1)

    torch.manual_seed(0)
    m = Cnn().eval()
    x = torch.randn(1, 3, 32, 32)
    torch.onnx.export(m, (x,), out + "/cnn.onnx", input_names=["image"], output_names=["probs"], opset_version=13)
    onnx.save(to_fp16(onnx.load(out + "/cnn.onnx")), out + "/cnn_fp16.onnx")
    np.save(out + "/cnn.input.npy", x.numpy())


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--test-model":
        test_model(sys.argv[2])
    elif len(sys.argv) == 3:
        onnx.save(to_fp16(onnx.load(sys.argv[1])), sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
