#!/usr/bin/python3
"""Writes the control-flow and recurrent test models as ONNX, each with its
inputs and torch's outputs (random weights, fixed seed):

  vad       a streaming LSTM voice-activity cell: If on the sample rate
            (torch.jit.script) picks one of two LSTM branches; inputs a
            64-feature frame, sr (int64) and the LSTM state h, c; outputs
            the speech probability and the next h, c.
  kws       a GRU keyword spotter: 49 frames of 40 MFCCs -> 12 classes.
  crnn      a text recognizer: convolutions over a 1x32x128 line image, a
            bidirectional LSTM over the 32 columns, per-column log-softmax.
  decoder   a greedy decoder (torch.jit.script): a Loop of an RNN cell that
            feeds back its argmax token until it emits the end token or 12
            steps; outputs the tokens.

usage: make_sequence_models.py OUT_DIR
writes OUT_DIR/NAME.onnx, OUT_DIR/NAME.in.<INPUT>.npy, OUT_DIR/NAME.out.<OUTPUT>.npy,
and for the streaming test vad.stream.x.npy (steps of x) with
vad.stream.prob.npy (the probability of each step, the state carried from
zeros at sr 16000). tests/models/sequence holds their output
(tests/convert/sequence_models_test.cpp).
"""
import os
import sys

import numpy as np
import torch
from torch import nn


class VadBranch(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.proj = nn.Linear(64, hidden)
        self.lstm = nn.LSTM(hidden, hidden)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x, h, c):
        z = torch.relu(self.proj(x)).unsqueeze(0)
        y, (h2, c2) = self.lstm(z, (h, c))
        return torch.sigmoid(self.head(y[0])), h2, c2


class Vad(nn.Module):
    def __init__(self):
        super().__init__()
        self.b16 = VadBranch()
        self.b8 = VadBranch()

    def forward(self, x, sr, h, c):
        if bool(sr == 16000):
            p, h2, c2 = self.b16(x, h, c)
        else:
            p, h2, c2 = self.b8(x, h, c)
        return p, h2, c2


class Kws(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(40, 64, batch_first=True)
        self.fc = nn.Linear(64, 12)

    def forward(self, x):
        y, h = self.gru(x)
        return self.fc(h[0])


class Crnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d((2, 1), (2, 1)),
            nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d((8, 2), (8, 2)))
        self.rnn = nn.LSTM(32, 48, bidirectional=True)
        self.fc = nn.Linear(96, 37)

    def forward(self, x):
        f = self.cnn(x)                      # [1, 32, 1, 32]
        f = f.squeeze(2).permute(2, 0, 1)    # [32, 1, 32]
        y, _ = self.rnn(f)
        return torch.log_softmax(self.fc(y), dim=2)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 24)
        self.wi = nn.Linear(24, 32)
        self.wh = nn.Linear(32, 32)
        self.out = nn.Linear(32, 16)

    def forward(self, h):
        tok = torch.zeros(1, dtype=torch.long)
        tokens = torch.zeros(0, dtype=torch.long)
        for _ in range(12):
            h = torch.tanh(self.wi(self.emb(tok)) + self.wh(h))
            tok = torch.argmax(self.out(h), dim=1)
            tokens = torch.cat([tokens, tok])
            if bool(tok[0] == 15):
                break
        return tokens


def export(name, model, args, input_names, output_names, out_dir, script=False):
    model.eval()
    with torch.no_grad():
        outs = model(*args)
    if not isinstance(outs, tuple):
        outs = (outs,)
    m = torch.jit.script(model) if script else model
    path = os.path.join(out_dir, name + ".onnx")
    torch.onnx.export(m, args, path, input_names=input_names, output_names=output_names, opset_version=14)
    for n, a in zip(input_names, args):
        np.save(os.path.join(out_dir, "%s.in.%s.npy" % (name, n)), a.numpy())
    for n, o in zip(output_names, outs):
        np.save(os.path.join(out_dir, "%s.out.%s.npy" % (name, n)), o.detach().numpy())
    print("wrote", path)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    vad = Vad()
    export("vad", vad, (torch.randn(1, 64), torch.tensor(16000), torch.randn(1, 1, 32) * 0.5,
                        torch.randn(1, 1, 32) * 0.5),
           ["x", "sr", "h", "c"], ["prob", "h_out", "c_out"], out, script=True)
    xs = torch.randn(5, 1, 64)
    h = torch.zeros(1, 1, 32)
    c = torch.zeros(1, 1, 32)
    probs = []
    with torch.no_grad():
        for x in xs:
            p, h, c = vad(x, torch.tensor(16000), h, c)
            probs.append(p)
    np.save(os.path.join(out, "vad.stream.x.npy"), xs.numpy())
    np.save(os.path.join(out, "vad.stream.prob.npy"), torch.stack(probs).numpy())
    export("kws", Kws(), (torch.randn(1, 49, 40),), ["mfcc"], ["logits"], out)
    export("crnn", Crnn(), (torch.randn(1, 1, 32, 128),), ["image"], ["log_probs"], out)
    # A seed whose decoder stops on the end token before the step limit, so
    # that the Loop's condition (not its trip count) ends it.
    for seed in range(1000):
        torch.manual_seed(seed)
        dec, h0 = Decoder(), torch.randn(1, 32)
        with torch.no_grad():
            n = dec(h0).shape[0]
        if 4 <= n <= 9:
            break
    export("decoder", dec, (h0,), ["h0"], ["tokens"], out, script=True)


if __name__ == "__main__":
    main()
