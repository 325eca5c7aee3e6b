"""Writes the verification report: README.md, measured.json and plots/<row>.png.

``measured.json`` is the machine-readable record of a run (one row per rule and
language); ``README.md`` is rendered from it alone (``render_readme``), so that
``check_report.py`` can prove the committed README matches the committed numbers, and
``harness.py --check-report`` can prove the committed numbers match today's run.
"""

import json
import os
import textwrap

import verdicts

LEAKY_COLOR = "#c0392b"
FIXED_COLOR = "#27ae60"
THRESHOLD_COLOR = "#555555"
REF_COLOR = "#2c6fbb"


def _plt():
    import matplotlib  # only the plots need it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# --------------------------------------------------------------------------- plots


def _xy(res, panel):
    if res is None or res.doc is None:
        return [], []
    bucket = res.series.get(panel.phase, {})
    ys = bucket.get(panel.key, [])
    xs = bucket.get(panel.x, list(range(len(ys))))
    n = min(len(xs), len(ys))
    ys = ys[:n]
    if panel.relative and ys:
        ys = [y - ys[0] for y in ys]
    return xs[:n], ys


def _text_figure(path, title, lines):
    plt = _plt()
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
    plt = _plt()
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
    top = max([b[1] for b in bars] + [b[2] for b in bars] + [1.0])
    ax.set_ylim(0, top * 1.15)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=72)
    plt.close(fig)


def y_limits(values, panel):
    """Axis range: from 0 (or below, for negative data) over at least ``min_span``, so
    that noise of a few KiB around zero reads as a flat line, and the threshold and
    reference lines are always in view."""
    marks = [v for v in (panel.threshold, panel.ref) if v is not None]
    lo = min([0.0] + list(values) + marks)
    hi = max([lo + panel.min_span] + list(values) + marks)
    pad = 0.08 * (hi - lo)
    return (lo - pad if lo < 0 else 0.0), hi + pad


def plot_rule(rep, path, device):
    """Writes the row's plot; returns False (and writes nothing) when there is nothing
    measured to draw (GPU-ONLY on the CPU, NOT RUN)."""
    o = rep.outcome
    title = f"{rep.rule.id} {rep.rule.slug}" + ("" if rep.lang == "python" else " (C++)")
    if o is None or o.verdict in (verdicts.GPU_ONLY, verdicts.NOT_RUN):
        return False
    if o.bars:
        _bar_figure(path, f"{title} ({device}): {o.verdict}", o.bars)
        return True
    panels = [p for p in o.panels if _xy(rep.leaky, p)[1] or _xy(rep.fixed, p)[1]]
    if not panels:
        _text_figure(path, f"{title} ({device}): {o.verdict}", o.text_panel or o.details[:4])
        return True
    plt = _plt()
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels) + 0.4, 2.9), dpi=72,
                             squeeze=False)
    for ax, panel in zip(axes[0], panels):
        values = []
        for res, label, color in ((rep.leaky, "leaky", LEAKY_COLOR),
                                  (rep.fixed, "fixed", FIXED_COLOR)):
            xs, ys = _xy(res, panel)
            if ys:
                values.extend(ys)
                ax.plot(xs, ys, label=label, color=color, lw=1.6,
                        marker="o" if len(ys) <= 12 else None, ms=3)
        if panel.threshold_slope is not None:
            xs = _xy(rep.leaky, panel)[0] or _xy(rep.fixed, panel)[0]
            if xs:
                ax.plot([xs[0], xs[-1]], [panel.threshold_slope * (x - xs[0]) for x in
                                          (xs[0], xs[-1])], color=THRESHOLD_COLOR, ls="--",
                        lw=1, label=panel.threshold_label or "threshold")
        if panel.threshold is not None:
            ax.axhline(panel.threshold, color=THRESHOLD_COLOR, ls="--", lw=1,
                       label=panel.threshold_label or "threshold")
        if panel.ref is not None:
            ax.axhline(panel.ref, color=REF_COLOR, ls=":", lw=1.2,
                       label=panel.ref_label or "reference")
        ax.set_ylim(*y_limits(values, panel))
        ax.set_title(panel.title, fontsize=9)
        ax.set_xlabel(panel.xlabel, fontsize=8)
        ax.set_ylabel(panel.ylabel, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="best")
    fig.suptitle(f"{title} ({device}): {o.verdict}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    fig.savefig(path, dpi=72)
    plt.close(fig)
    return True


# --------------------------------------------------------------------------- measured.json


def _rounded(obj):
    """Floats to 4 significant digits, so that measured.json stays readable."""
    if isinstance(obj, float):
        return float(f"{obj:.4g}")
    if isinstance(obj, dict):
        return {k: _rounded(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_rounded(v) for v in obj]
    return obj


def plot_name(rep):
    return f"plots/{rep.rule.id}{'' if rep.lang == 'python' else '-cpp'}.png"


def build_measured(reports, doc):
    """The machine-readable record of a run: what README.md is rendered from."""
    device = doc["device"]
    measured = {"generated_by": "tests/verify/harness.py --report", "env": doc["env"],
                "device": device, "lint": doc["lint"], "measure": doc["measure"],
                "rows": {}}
    for rep in reports:
        o = rep.outcome
        entry = {"rule": rep.rule.id, "lang": rep.lang, "slug": rep.rule.slug,
                 "claim": rep.rule.claim, "verdict": rep.verdict,
                 "gpu_only": rep.rule.gpu_only,
                 "cpu_partial": rep.rule.cpu_partial if device != "cuda" else "",
                 "leaky_path": rep.scenario("leaky"), "fixed_path": rep.scenario("fixed")}
        if o is not None:
            entry.update(metric=o.metric, leaky=o.leaky, fixed=o.fixed, threshold=o.threshold,
                         numbers=o.numbers, details=o.details, claim_notes=o.claim_notes)
        if rep.skip_reason:
            entry["skipped"] = rep.skip_reason
        if rep.lint_ran:
            entry["lint"] = {"status": rep.lint_status, "error": rep.lint_error,
                             "leaky_rules": rep.lint_leaky.rules,
                             "fixed_rules": rep.lint_fixed.rules}
        runs = {}
        for res in (rep.leaky, rep.fixed):
            if res is not None:
                runs[res.variant] = {"exit": res.returncode, "wall_s": round(res.wall_s, 1)}
        entry["runs"] = runs
        measured["rows"][rep.key] = entry
    return _rounded(json.loads(json.dumps(measured, default=str)))


# --------------------------------------------------------------------------- markdown


def _md(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def lint_cells(row):
    lint = row.get("lint")
    if not lint:
        return "not run", "not run"
    if lint.get("error"):
        return "error", "error"
    rid = row["rule"]
    flagged = rid in lint["leaky_rules"]
    others = [r for r in lint["leaky_rules"] if r != rid]
    leaky = ("flagged" if flagged else "**missed**") + (
        f" (+{', '.join(others)})" if others else "")
    fixed = ("clean" if not lint["fixed_rules"]
             else "**flagged** " + ", ".join(lint["fixed_rules"]))
    return leaky, fixed


def _env_lines(measured):
    env = measured["env"]
    device = measured["device"]
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
        f"({'lint + measure' if measured['lint'] else 'measurement only'}; 1-minute load "
        f"average at the start: {env.get('load_average_at_start')})",
    ]


METHOD = """\
## How the numbers are measured

Each scenario is a small, self-contained program (`--device {cpu,cuda} --iters N --json
OUT`); the pattern under test is in the scenario file itself, the measuring helpers are
in `tests/verify/measure.py`. Every program runs in its own process with a timeout. A C++
scenario (`leaky.cpp` / `fixed.cpp`, built by CMake as `<ID>_leaky` / `<ID>_fixed`) takes
`--iters N --json OUT`, writes the same keys as its Python twin, and is judged by the same
verdict function.

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
  phase), `memory_reserved` / `max_memory_reserved`; `torch.cuda.memory_stats()` for the
  caching allocator's cudaMalloc / cudaFree counts (`segment.all.allocated` / `.freed`)
  and its retries (`num_alloc_retries`); `torch.cuda.mem_get_info` for device memory
  outside this process's allocator (DataLoader workers' CUDA contexts).
- **DataLoader workers**: `/proc/<pid>/smaps_rollup` of every child process
  (Private_Dirty: pages a worker owns alone; Pss_Anon summed over parent and workers
  counts every copy-on-write page once) plus the growth of `Shmem` in `/proc/meminfo`
  (batches waiting in shared memory are mapped by no process).
- **Training correctness**: loss on the whole training set after every step, the norm
  of the parameter change per step, and how many `backward()` results `.grad` holds.
- **Errors**: the exception a phase raised (type, message, the scenario line); for child
  processes their exit status and the error text on stderr.

Plots: the dashed line is the threshold the verdict compares with, the dotted line a
reference level (LL301: the model's size); the y axis always spans at least one unit
from zero, so that noise of a few KiB reads as flat.
"""

GPU_COMMAND = """\
## The GPU half

Four rules (LL302, LL303, LL404, LL501) exist only with CUDA, and LL301's and LL402's
cache / pinned-memory / GPU-memory halves need a GPU too. One command measures them on a
machine with one GPU, bounded to 8 minutes:

    OUT=/tmp/verify-cuda tests/verify/gpu.sh

It runs `harness.py --measure-only --device cuda` (leaklint's lint half stays in the CPU
run), keeps every scenario's raw JSON, writes a separate report (README.md,
measured.json, plots) for `docs/verification/cuda/` and packs everything into
`$OUT/verify-cuda.tar.gz`. Every CUDA threshold can fail: `test_harness.py` swaps leaky
and fixed in synthetic CUDA results and requires every CUDA verdict to fail.
"""


def _row_name(row):
    rid = row["rule"]
    return f"[{rid}](#{rid.lower()}) `{row['slug']}`", ("Python" if row["lang"] == "python"
                                                      else "C++")


def render_readme(measured, plots=None):
    """README.md from measured.json alone. ``plots``: the row keys that have a plot
    (default: every row measured with panels, as recorded in the row's ``plot``)."""
    device = measured["device"]
    where = "docs/verification/cuda/" if device == "cuda" else "docs/verification/"
    lines = [
        "# Leak verification: measured results" + (" (CUDA)" if device == "cuda" else ""),
        "",
        f"Generated by `tests/verify/harness.py --report {where}` from `measured.json`; do "
        "not edit by hand. Each rule of the catalog (RULES.md) has a scenario pair "
        "under `tests/verify/<ID>/`: `leaky.py` has the pattern, `fixed.py` has the fix "
        "(and, where written, a LibTorch pair `leaky.cpp` / `fixed.cpp`: one row per rule "
        "and language). The harness lints both with leaklint (the leaky program must be "
        "flagged with the rule, the fixed one must have no finding at all) and runs both, "
        "measuring what the rule's message claims. `ctest -R verify_cpu` fails when this "
        "report disagrees with what the suite measures (rows, verdicts, lint results; "
        "numbers beyond the tolerance stated in `tests/verify/check_report.py`).",
        "",
        "Environment:",
        "",
        *_env_lines(measured),
        "",
        "Verdicts: **CONFIRMED** - the leaky program shows the claimed effect beyond the "
        "stated threshold and the fixed program does not; **NOT CONFIRMED** - it does not "
        "(or a scenario failed); **GPU-ONLY** - the effect exists only on a GPU; on a CPU "
        "run only the lint half is checked; **NOT RUN** - not measured (e.g. C++ scenario "
        "programs not built); **(CPU part)** - only the part of the claim that exists "
        "without a GPU was measured.",
        "",
        "## Results",
        "",
        "| Rule | Language | leaklint: leaky | leaklint: fixed | Metric | Leaky | Fixed | "
        "Verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    rows = measured["rows"]
    for key, row in rows.items():
        ll, lf = lint_cells(row)
        name, lang = _row_name(row)
        verdict = row["verdict"]
        if verdict == verdicts.GPU_ONLY:
            cells = ["not measured on the CPU", "-", "-", "GPU-ONLY"]
        elif verdict == verdicts.NOT_RUN or "metric" not in row:
            cells = [row.get("skipped", "-"), "-", "-", verdicts.NOT_RUN]
        else:
            v = f"**{verdict}**" + (" (CPU part)" if row.get("cpu_partial") else "")
            cells = [row["metric"], row["leaky"], row["fixed"], v]
        lines.append(f"| {name} | {lang} | {ll} | {lf} | " + " | ".join(_md(c) for c in cells)
                     + " |")
        for n in row.get("claim_notes") or []:
            notes.append((row["rule"] + ("" if row["lang"] == "python" else " (C++)"), n))
        for part in [row.get("cpu_partial")] if row.get("cpu_partial") else []:
            notes.append((row["rule"], f"CPU part only: {part}."))
    lines += ["", "## Where the measurement narrows or contradicts the catalog's wording", ""]
    lines += [f"- **{rid}**: {n}" for rid, n in notes] or ["- none"]
    lines += ["", METHOD]
    if device != "cuda":
        lines += [GPU_COMMAND]
    lines += ["## Per rule", ""]
    seen_rules = set()
    for key, row in rows.items():
        rid = row["rule"]
        if rid not in seen_rules:
            seen_rules.add(rid)
            lines += [f"### {rid}", "", f"`{row['slug']}`: *{row['claim']}*.", ""]
        lang = "Python" if row["lang"] == "python" else "C++"
        lines += [f"{lang} scenario: [`{os.path.basename(row['leaky_path'])}`]"
                  f"(../../{'../' if device == 'cuda' else ''}{row['leaky_path']}) / "
                  f"[`{os.path.basename(row['fixed_path'])}`]"
                  f"(../../{'../' if device == 'cuda' else ''}{row['fixed_path']}).", ""]
        if row.get("lint"):
            ll, lf = lint_cells(row)
            lines += [f"leaklint: leaky {ll}; fixed {lf}.", ""]
        verdict = row["verdict"]
        if "metric" not in row:
            lines += ["Not measured (lint-only run).", ""]
            continue
        if verdict == verdicts.GPU_ONLY:
            lines += [f"**GPU-ONLY**: {row.get('skipped', '')}. Not measured in this run "
                      f"(no GPU): there is no plot. `tests/verify/gpu.sh` measures it on a "
                      f"machine with a GPU.", ""]
            continue
        if verdict == verdicts.NOT_RUN:
            lines += [f"**NOT RUN**: {row.get('skipped', '')}.", ""]
            continue
        lines += [f"**{verdict}**" + (" (CPU part)" if row.get("cpu_partial") else "")
                  + f" - {row['metric']}: leaky {row['leaky']}, fixed {row['fixed']} "
                  f"(threshold: {row['threshold']}).", ""]
        lines += [f"- {_md(d)}" for d in row.get("details", []) if str(d).strip()]
        if row.get("cpu_partial"):
            lines.append(f"- CPU run: {row['cpu_partial']}.")
        for variant in ("leaky", "fixed"):
            r = (row.get("runs") or {}).get(variant)
            if r:
                ext = "py" if row["lang"] == "python" else "cpp"
                lines.append(f"- `{variant}.{ext}` ran {r['wall_s']:.1f} s (exit {r['exit']})")
        lines.append("")
        if row.get("plot"):
            lines += [f"![{rid}]({row['plot']})", ""]
    return "\n".join(lines).rstrip() + "\n"


def write(outdir, reports, doc, plots=True):
    """Writes outdir/measured.json, outdir/README.md and outdir/plots/*.png. Stale plots
    (of rows no longer measured) are removed."""
    os.makedirs(os.path.join(outdir, "plots"), exist_ok=True)
    measured = build_measured(reports, doc)
    drawn = set()
    for rep in reports:
        name = plot_name(rep)
        if plots and plot_rule(rep, os.path.join(outdir, name), doc["device"]):
            drawn.add(name)
            measured["rows"][rep.key]["plot"] = name
    for old in os.listdir(os.path.join(outdir, "plots")):
        if f"plots/{old}" not in drawn and old.endswith(".png") and plots:
            os.unlink(os.path.join(outdir, "plots", old))
    with open(os.path.join(outdir, "measured.json"), "w") as fh:
        json.dump(measured, fh, indent=1)
        fh.write("\n")
    with open(os.path.join(outdir, "README.md"), "w") as fh:
        fh.write(render_readme(measured))
    return measured
