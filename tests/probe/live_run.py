"""live_run.py - a small PyTorch run with the probe attached, for
tests/sh/follow_probe.sh: trains STEPS steps of a nanoGPT-style model (gpt) or
a torch.nn.TransformerEncoder (post, or pre for norm_first=True), slowly
enough that a person (or tmux) can pause it from `normscope --follow`;
with LR, at that learning rate and at full speed (the diagnosis' runs).
Usage: live_run.py STREAM STEPS gpt|post|pre [LR]"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "src", "probe"))

import torch  # noqa: E402

import normscope_probe  # noqa: E402
from models import GPT, EncoderLM, batch  # noqa: E402


def main():
    path, steps, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    lr = float(sys.argv[4]) if len(sys.argv) > 4 else None
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = GPT() if kind == "gpt" else EncoderLM(norm_first=kind == "pre")
    opt = torch.optim.AdamW(model.parameters(), lr=lr or 1e-3)
    gen = torch.Generator().manual_seed(1)
    with normscope_probe.attach(model, opt, path=path) as probe:
        for _ in range(steps):
            x, y = batch(gen)
            loss = model(x, y)
            opt.zero_grad()
            loss.backward()
            probe.step(loss)
            opt.step()
            if lr is None:
                time.sleep(0.05)


if __name__ == "__main__":
    main()
