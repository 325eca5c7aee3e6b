"""LL103 leaky: truncated BPTT that feeds the hidden state back without detach().

The hidden state returned by the model in one chunk is the input of the next chunk, so
each chunk's graph is linked to every earlier one.
Phases "step_each_chunk" / "step_each_chunk_retain_graph": the usual loop (backward +
step per chunk). Without ``retain_graph=True`` the second backward fails ("backward
through the graph a second time"); with it, the optimizer's in-place update of the
weights saved by earlier chunks fails the second backward.
Phase "accumulate": gradients are accumulated over the whole stream and applied once
at its end, so nothing fails: the retained graph and the backward time grow by one
chunk every iteration.
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


def train_tbptt(model, chunks, optimizer, criterion, device, run, phase, retain_graph):
    model.train()
    hidden = model.init_hidden(chunks[0][0].size(1), device)
    for step, (inputs, targets) in enumerate(chunks):
        optimizer.zero_grad()
        output, hidden = model(inputs, hidden)
        loss = criterion(output.reshape(-1, VOCAB), targets.reshape(-1))
        loss.backward(retain_graph=retain_graph)
        optimizer.step()
        run.sample(step, phase=phase, loss=loss.item())


def accumulate_tbptt(model, chunks, optimizer, criterion, device, run):
    model.train()
    optimizer.zero_grad()
    hidden = model.init_hidden(chunks[0][0].size(1), device)
    for step, (inputs, targets) in enumerate(chunks):
        output, hidden = model(inputs, hidden)
        loss = criterion(output.reshape(-1, VOCAB), targets.reshape(-1))
        run.mem.sync()
        start = time.perf_counter()
        loss.backward(retain_graph=True)
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
                  run.device, run, "step_each_chunk", False)
        run.phase("step_each_chunk_retain_graph", train_tbptt, model, chunks, optimizer,
                  criterion, run.device, run, "step_each_chunk_retain_graph", True)
        chunks = make_chunks(run.iters, 8, 16, run.device)
        run.phase("accumulate", accumulate_tbptt, model, chunks, optimizer, criterion,
                  run.device, run)


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL103", "leaky", iters=24))
