"""LL103 fixed: truncated BPTT that detaches the hidden state at each chunk.

``hidden = hidden.detach()`` cuts the link to the previous chunk, so every backward
covers one chunk and needs no ``retain_graph``; memory and backward time stay flat.
Phases "step_each_chunk" (backward + step per chunk) and "accumulate" (gradients
accumulated over the stream, one step at its end).
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import measure  # noqa: E402

VOCAB = 64


class CharRNN(nn.Module):
    def __init__(self, vocab=VOCAB, embed=16, hidden=64):
        super().__init__()
        self.hidden_size = hidden
        self.embed = nn.Embedding(vocab, embed)
        self.rnn = nn.GRU(embed, hidden)
        self.head = nn.Linear(hidden, vocab)

    def init_hidden(self, batch, device):
        return torch.zeros(1, batch, self.hidden_size, device=device)

    def forward(self, tokens, hidden):
        out, hidden = self.rnn(self.embed(tokens), hidden)
        return self.head(out), hidden


def make_chunks(count, length, batch, device):
    stream = torch.randint(0, VOCAB, (count * length + 1, batch))
    chunks = []
    for i in range(count):
        start = i * length
        chunks.append((stream[start:start + length].to(device),
                       stream[start + 1:start + length + 1].to(device)))
    return chunks


def train_tbptt(model, chunks, optimizer, criterion, device, run, phase):
    model.train()
    hidden = model.init_hidden(chunks[0][0].size(1), device)
    for step, (inputs, targets) in enumerate(chunks):
        hidden = hidden.detach()
        optimizer.zero_grad()
        output, hidden = model(inputs, hidden)
        loss = criterion(output.reshape(-1, VOCAB), targets.reshape(-1))
        loss.backward()
        optimizer.step()
        run.sample(step, phase=phase, loss=loss.item())


def accumulate_tbptt(model, chunks, optimizer, criterion, device, run):
    model.train()
    optimizer.zero_grad()
    hidden = model.init_hidden(chunks[0][0].size(1), device)
    for step, (inputs, targets) in enumerate(chunks):
        hidden = hidden.detach()
        output, hidden = model(inputs, hidden)
        loss = criterion(output.reshape(-1, VOCAB), targets.reshape(-1))
        run.mem.sync()
        start = time.perf_counter()
        loss.backward()
        run.mem.sync()
        run.sample(step, phase="accumulate", backward_ms=1000 * (time.perf_counter() - start),
                   loss=loss.item())
    optimizer.step()


def scenario(run):
    model = CharRNN().to(run.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    criterion = nn.CrossEntropyLoss()
    run.meter.ignore(model.parameters())
    with run.meter:
        chunks = make_chunks(4, 8, 16, run.device)
        run.phase("step_each_chunk", train_tbptt, model, chunks, optimizer, criterion,
                  run.device, run, "step_each_chunk")
        chunks = make_chunks(run.iters, 8, 16, run.device)
        run.phase("accumulate", accumulate_tbptt, model, chunks, optimizer, criterion,
                  run.device, run)


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL103", "fixed", iters=24))
