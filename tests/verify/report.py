"""Writes the verification report: README.md, measured.json and plots/<ID>.png."""

import json
import os
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import verdicts  # noqa: E402

LEAKY_COLOR = "#c0392b"
FIXED_COLOR = "#27ae60"


# --------------------------------------------------------------------------- plots


def _xy(res, panel):
    if res is None or res.doc is None:
        return [], []
    bucket = res.series.get(panel.phase, {})
    ys = bucket.get(panel.key, [])
    xs = bucket.get(panel.x, list(range(len(ys))))
    n = min(len(xs), len(ys))
    return xs[:n], ys[:n]


def _text_figure(path, title, lines):
    wrapped = []
    for line in lines:
        chunks = textwrap.wrap(str(line), 88) or [""]
        wrapped.append((line, chunks[0]))
        wrapped.extend((line, "    " + c) for c in chunks[1:])
    height = 0.55 + 0.2 * len(wrapped)
    fig = plt.figure(figsize=(7, height), dpi=72)
    fig.text(0.02, 1 - 0.12 / height, title, fontsize=10, weight="bold", va="top")
    for i, (line, text) in enumerate(wrapped):
        color = LEAKY_COLOR if line.startswith("leaky") else (
            FIXED_COLOR if line.startswith("fixed") else "#333333")
        fig.text(0.02, 1 - (0.45 + 0.2 * i) / height, text, fontsize=8, va="top",
                 color=color, family="monospace")
    fig.savefig(path, dpi=72)
    plt.close(fig)


def _bar_figure(path, title, bars):
    fig, ax = plt.subplots(figsize=(1.6 + 1.5 * len(bars), 2.7), dpi=72)
    xs = range(len(bars))
    width = 0.38
    ax.bar([x - width / 2 for x in xs], [b[1] for b in bars], width, label="leaky",
           color=LEAKY_COLOR)
    ax.bar([x + width / 2 for x in xs], [b[2] for b in bars], width, label="fixed",
           color=FIXED_COLOR)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"{b[0]}" for b in bars], fontsize=8)
    ax.set_ylabel(bars[0][3], fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=72)
    plt.close(fig)


def plot_rule(rep, path, device):
    o = rep.outcome
    title = f"{rep.rule.id} {rep.rule.slug}"
    if o is None or o.verdict == verdicts.GPU_ONLY:
        _text_figure(path, f"{title}: GPU-ONLY, not measured on {device}",
                     [rep.skip_reason or "not measured"])
        return
    if o.bars:
        _bar_figure(path, f"{title} ({device}): {o.verdict}", o.bars)
        return
    panels = [p for p in o.panels if _xy(rep.leaky, p)[1] or _xy(rep.fixed, p)[1]]
    if not panels:
        _text_figure(path, f"{title}: {o.verdict}", o.text_panel or o.details[:4])
        return
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels) + 0.4, 2.7), dpi=72,
                             squeeze=False)
    for ax, panel in zip(axes[0], panels):
        for res, label, color in ((rep.leaky, "leaky", LEAKY_COLOR),
                                  (rep.fixed, "fixed", FIXED_COLOR)):
            xs, ys = _xy(res, panel)
            if ys:
                ax.plot(xs, ys, label=label, color=color, lw=1.6,
                        marker="o" if len(ys) <= 12 else None, ms=3)
        ax.set_title(panel.title, fontsize=9)
        ax.set_xlabel(panel.xlabel, fontsize=8)
        ax.set_ylabel(panel.ylabel, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    fig.suptitle(f"{title} ({device}): {o.verdict}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    fig.savefig(path, dpi=72)
    plt.close(fig)


# --------------------------------------------------------------------------- markdown


def _md(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def _lint_cells(rep):
    if not rep.lint_ran:
        return "not run", "not run"
    if rep.lint_error:
        return "error", "error"
    others = [r for r in rep.lint_leaky.rules if r != rep.rule.id]
    leaky = ("flagged" if rep.leaky_flagged else "**missed**") + (
        f" (+{', '.join(others)})" if others else "")
    fixed = "clean" if rep.fixed_clean else "**flagged** " + ", ".join(rep.lint_fixed.rules)
    return leaky, fixed


def _env_lines(doc):
    env = doc["env"]
    device = doc["device"]
    if device == "cuda":
        dev = f"CUDA: {env.get('cuda_device')} (CUDA {env.get('cuda_version')})"
    else:
        dev = "CPU only (no CUDA device)"
    torch_v = env.get("torch", "?")
    deb = env.get("debian_python3_torch")
    return [
        f"- Date: {env.get('date')}",
        f"- Device: {dev}",
        f"- torch: {torch_v}" + (f" (Debian package python3-torch {deb})" if deb else ""),
        f"- Python: {env.get('python', env.get('python_harness'))}",
        f"- CPU: {env.get('cpu')}, {env.get('cores')} cores; {env.get('platform')}",
        f"- Suite run time: {env.get('suite_seconds')} s wall, "
        f"{env.get('suite_cpu_seconds')} s CPU of the scenario processes "
        f"({'lint + measure' if doc['lint'] else 'measurement only'}; 1-minute load "
        f"average at the start: {env.get('load_average_at_start')})",
    ]


METHOD = """\
## How the numbers are measured

Each scenario is a small, self-contained program (`--device {cpu,cuda} --iters N --json
OUT`); the pattern under test is in the scenario file itself, the measuring helpers are
in `tests/verify/measure.py`. Every program runs in its own process with a timeout.

- **Activations held by autograd** (`saved_mib`): `torch.autograd.graph.saved_tensors_hooks`
  counts every storage that autograd saves for a backward pass, once, for as long as any
  graph still references it (the hook stores a detached alias, so it adds no reference
  cycle; the count drops when `backward()` frees the buffers or the graph dies).
  Parameters are excluded. Autograd skips its "modified by an inplace operation" check
  for tensors packed by hooks, so the meter repeats that check itself - code behaves as
  it does without the meter.
- **CPU memory**: process RSS and its high-water mark from `/proc/self/status`
  (VmRSS/VmHWM; the mark is reset through `/proc/self/clear_refs`), and live malloc
  memory from glibc's `mallinfo2()` (`heap_mib`), which is not inflated by heap
  fragmentation. `measure.py` fixes glibc's mmap threshold at 128 KiB (glibc's initial
  value) so that a freed tensor leaves RSS at once instead of staying on glibc's free lists.
- **CUDA memory**: `torch.cuda.memory_allocated`, `max_memory_allocated` (reset per
  phase), `memory_reserved`, and `torch.cuda.mem_get_info` for memory outside this
  process's allocator.
- **DataLoader workers**: `/proc/<pid>/smaps_rollup` of every child process
  (Private_Dirty: pages a worker owns alone; Pss_Anon summed over parent and workers
  counts every copy-on-write page once) plus the growth of `Shmem` in `/proc/meminfo`
  (batches waiting in shared memory are mapped by no process).
- **Training correctness**: loss on the whole training set after every step, the norm
  of the parameter change per step, and how many `backward()` results `.grad` holds.
- **Errors**: the exception a phase raised (type, message, the scenario line); for child
  processes their exit status and the error text on stderr.
"""


def _rounded(obj):
    """Floats to 4 significant digits, so that measured.json stays readable."""
    if isinstance(obj, float):
        return float(f"{obj:.4g}")
    if isinstance(obj, dict):
        return {k: _rounded(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_rounded(v) for v in obj]
    return obj


def write(outdir, reports, doc):
    os.makedirs(os.path.join(outdir, "plots"), exist_ok=True)
    device = doc["device"]
    measured = {"generated_by": "tests/verify/harness.py --report", "env": doc["env"],
                "device": device, "rules": {}}
    lines = [
        "# Leak verification: measured results",
        "",
        "Generated by `tests/verify/harness.py --report docs/verification/`; do not edit by "
        "hand. Each rule of the catalog (RULES.md) has a scenario pair "
        "under `tests/verify/<ID>/`: `leaky.py` has the pattern, `fixed.py` has the fix. "
        "The harness lints both with leaklint (the leaky program must be flagged with the "
        "rule, the fixed one must have no finding at all) and runs both, measuring what the "
        "rule's message claims.",
        "",
        "Environment:",
        "",
        *_env_lines(doc),
        "",
        "Verdicts: **CONFIRMED** - the leaky program shows the claimed effect beyond the "
        "stated threshold and the fixed program does not; **NOT CONFIRMED** - it does not "
        "(or a scenario failed); **GPU-ONLY** - the effect exists only on a GPU; on a CPU "
        "run only the lint half is checked.",
        "",
        "## Results",
        "",
        "| Rule | leaklint: leaky | leaklint: fixed | Metric | Leaky | Fixed | Verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    notes = []
    for rep in reports:
        o = rep.outcome
        ll, lf = _lint_cells(rep)
        rid = rep.rule.id
        if o is None:
            row = ["-", "-", "-", verdicts.NOT_RUN]
        elif o.verdict == verdicts.GPU_ONLY:
            row = ["not measured on the CPU", "-", "-", "GPU-ONLY"]
        else:
            verdict = f"**{o.verdict}**"
            if rep.rule.cpu_partial and device != "cuda":
                verdict += " (CPU part)"
            row = [o.metric, o.leaky, o.fixed, verdict]
        lines.append(f"| [{rid}](#{rid.lower()}) `{rep.rule.slug}` | {ll} | {lf} | "
                     + " | ".join(_md(c) for c in row) + " |")
        if o is not None and o.claim_notes:
            notes.extend((rid, n) for n in o.claim_notes)
        plot = os.path.join(outdir, "plots", f"{rid}.png")
        if o is not None:
            plot_rule(rep, plot, device)
        entry = {"slug": rep.rule.slug, "claim": rep.rule.claim, "verdict": rep.verdict,
                 "device": device, "torch": doc["env"].get("torch")}
        if o is not None:
            entry.update(metric=o.metric, leaky=o.leaky, fixed=o.fixed, threshold=o.threshold,
                         numbers=o.numbers, details=o.details, claim_notes=o.claim_notes)
        if rep.skip_reason:
            entry["skipped"] = rep.skip_reason
        if rep.lint_ran:
            entry["lint"] = {"status": rep.lint_status, "leaky_rules": rep.lint_leaky.rules,
                             "fixed_rules": rep.lint_fixed.rules}
        measured["rules"][rid] = entry
    lines += ["", "## Where the measurement narrows or contradicts the catalog's wording", ""]
    if notes:
        for rid, note in notes:
            lines.append(f"- **{rid}**: {note}")
    else:
        lines.append("- none")
    lines += ["", METHOD]
    lines += ["## Per rule", ""]
    for rep in reports:
        o = rep.outcome
        rid = rep.rule.id
        lines += [f"### {rid}", "",
                  f"`{rep.rule.slug}`: *{rep.rule.claim}*.", "",
                  f"Scenario: [`leaky.py`](../../tests/verify/{rid}/leaky.py) / "
                  f"[`fixed.py`](../../tests/verify/{rid}/fixed.py).", ""]
        if rep.lint_ran:
            ll, lf = _lint_cells(rep)
            lines += [f"leaklint: leaky {ll}; fixed {lf}.", ""]
        if o is None:
            lines += ["Not measured (lint-only run).", ""]
            continue
        if o.verdict == verdicts.GPU_ONLY:
            lines += [f"**GPU-ONLY**: {rep.skip_reason}. Run `harness.py --device cuda` on a "
                      f"machine with a GPU to measure it.", ""]
        else:
            lines += [f"**{o.verdict}** - {o.metric}: leaky {o.leaky}, fixed {o.fixed} "
                      f"(threshold: {o.threshold}).", ""]
            lines += [f"- {_md(d)}" for d in o.details if d.strip()]
            if rep.rule.cpu_partial and device != "cuda":
                lines.append(f"- CPU run: {rep.rule.cpu_partial}.")
            for res in (rep.leaky, rep.fixed):
                if res is not None:
                    lines.append(f"- `{res.variant}.py` ran {res.wall_s:.1f} s "
                                 f"(exit {res.returncode})")
            lines.append("")
        lines += [f"![{rid}](plots/{rid}.png)", ""]
    with open(os.path.join(outdir, "README.md"), "w") as fh:
        fh.write("\n".join(lines).rstrip() + "\n")
    with open(os.path.join(outdir, "measured.json"), "w") as fh:
        json.dump(_rounded(measured), fh, indent=1, default=str)
        fh.write("\n")
