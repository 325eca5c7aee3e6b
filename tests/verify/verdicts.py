"""What each rule's message claims, and how a leaky/fixed measurement pair decides it.

One ``Rule`` per catalog ID. ``evaluate(leaky, fixed, device)`` receives the two
scenario results (``harness.ScenarioResult``) and returns an ``Outcome``:

* ``CONFIRMED``      the leaky program shows the claimed effect beyond the threshold
                     and the fixed program does not;
* ``NOT CONFIRMED``  anything else (including a scenario that crashed unexpectedly);
* ``GPU-ONLY``       decided by the harness, not here: the effect exists only on a GPU
                     and this run has none.

``claim_notes`` records where the measurement disagrees with (or narrows) what the
catalog says, so that messages and docs can follow the measurement.
"""

import math
import re
import statistics
from dataclasses import dataclass, field

CONFIRMED = "CONFIRMED"
NOT_CONFIRMED = "NOT CONFIRMED"
GPU_ONLY = "GPU-ONLY"
NOT_RUN = "NOT RUN"


@dataclass
class Panel:
    """One plot panel: ``key`` of ``phase`` over ``x`` for leaky and fixed."""

    title: str
    key: str
    ylabel: str
    phase: str = "main"
    x: str = "step"
    xlabel: str = "iteration"
    threshold: float = None       # drawn as a dashed line: what the verdict compares with
    threshold_label: str = ""
    threshold_slope: float = None  # a threshold on growth: the line y = slope * x, dashed
    ref: float = None             # a reference level (e.g. the model's size), dotted
    ref_label: str = ""
    min_span: float = 1.0         # y axis spans at least this much, so noise reads small
    relative: bool = False        # plot the change since the first sample


@dataclass
class Outcome:
    verdict: str
    metric: str
    leaky: str
    fixed: str
    threshold: str
    numbers: dict = field(default_factory=dict)
    details: list = field(default_factory=list)
    claim_notes: list = field(default_factory=list)
    panels: list = field(default_factory=list)
    text_panel: list = field(default_factory=list)
    bars: list = field(default_factory=list)     # (label, leaky value, fixed value, unit)


@dataclass
class Rule:
    id: str
    slug: str
    claim: str
    evaluate: object
    gpu_only: bool = False
    gpu_reason: str = ""
    cpu_partial: str = ""
    timeout_s: int = 180


# --------------------------------------------------------------------------- helpers


def series(res, key, phase="main"):
    return list(res.series.get(phase, {}).get(key, []))


def slope(ys, xs=None):
    """Least-squares slope of ys over xs (default 0..n-1); 0.0 for fewer than 2 points."""
    if xs is None:
        xs = list(range(len(ys)))
    n = len(ys)
    if n < 2:
        return 0.0
    mx = sum(xs) / n
    my = sum(ys) / n
    den = sum((x - mx) ** 2 for x in xs)
    if den == 0:
        return 0.0
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den


def last(values, default=0.0):
    return values[-1] if values else default


def mib(v):
    return f"{v:.1f} MiB"


def kib(v):
    return f"{v:.1f} KiB"


def err_text(err):
    if not err:
        return "no error"
    where = err.get("where") or {}
    loc = f" at {where.get('file')}:{where.get('line')} `{where.get('code')}`" if where else ""
    msg = err.get("message", "").splitlines()[0] if err.get("message") else ""
    msg = re.sub(r"^RuntimeError: ", "", msg)
    if len(msg) > 160:
        msg = msg[:157] + "..."
    return f"{err.get('type')}: {msg}{loc}"


def broken(res):
    """Why a scenario result cannot be evaluated, or None."""
    if res is None:
        return "not run"
    if res.timed_out:
        return f"timed out after {res.wall_s:.0f} s"
    if res.doc is None:
        tail = (res.stderr or "").strip().splitlines()[-1:] or ["no output"]
        return f"no measurements (exit {res.returncode}): {tail[0][:200]}"
    if res.doc.get("skipped"):
        return f"skipped: {res.doc['skipped']}"
    if res.doc.get("error"):
        return "crashed: " + err_text(res.doc["error"])
    return None


def precheck(leaky, fixed, metric):
    for name, res in (("leaky", leaky), ("fixed", fixed)):
        why = broken(res)
        if why:
            return Outcome(NOT_CONFIRMED, metric, "-", "-", "-",
                           details=[f"{name} scenario {why}"])
    return None


def verdict(ok):
    return CONFIRMED if ok else NOT_CONFIRMED


# --------------------------------------------------------------------------- LL101


def eval_ll101(leaky, fixed, device):
    metric = "peak memory of an evaluation loop that keeps nothing"
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad
    mem = "allocated" if device == "cuda" else "RSS"
    l_saved = leaky.scalars.get("saved_peak_mib", 0.0)
    f_saved = fixed.scalars.get("saved_peak_mib", 0.0)
    lpeak = leaky.scalars.get("peak_above_start_mib", 0.0)
    fpeak = fixed.scalars.get("peak_above_start_mib", 0.0)
    per_forward = max(series(leaky, "saved_mib"), default=0.0)
    # the verdict: phase main (nothing kept across batches)
    ok = l_saved >= 1.0 and f_saved <= 0.05 and lpeak - fpeak >= 0.5 * l_saved
    # informative: phase kept (outputs kept across batches, LL102's effect)
    k_l, k_f = series(leaky, "saved_mib", "kept"), series(fixed, "saved_mib", "kept")
    kept = leaky.scalars.get("kept_outputs_mib", 0.0)
    return Outcome(
        verdict(ok), metric,
        f"{lpeak:.1f} MiB ({l_saved:.1f} MiB saved by autograd)",
        f"{fpeak:.1f} MiB ({f_saved:.1f} MiB saved)",
        ">= 1 MiB saved by autograd at peak in leaky, ~0 in fixed; leaky's peak "
        f"{mem} above the loop's start exceeds fixed's by >= half of what autograd saved",
        numbers={"saved_peak_mib_leaky": l_saved, "saved_peak_mib_fixed": f_saved,
                 "saved_per_forward_mib": per_forward,
                 "peak_above_start_mib_leaky": lpeak, "peak_above_start_mib_fixed": fpeak,
                 "kept_saved_after_loop_mib_leaky": last(k_l),
                 "kept_saved_after_loop_mib_fixed": last(k_f),
                 "kept_peak_above_start_mib_leaky": leaky.scalars.get("kept_peak_above_start_mib"),
                 "kept_peak_above_start_mib_fixed": fixed.scalars.get("kept_peak_above_start_mib"),
                 "kept_outputs_mib": kept, "batches": len(series(leaky, "saved_mib"))},
        details=[
            f"phase main (the loop keeps nothing across batches): each forward pass with grad "
            f"enabled saved {per_forward:.2f} MiB of activations for a backward pass that never "
            f"comes, {l_saved:.2f} MiB at the peak (the previous batch's output and graph are "
            f"still alive while the next forward runs); under no_grad: {f_saved:.2f} MiB",
            f"phase main: peak {mem} above the start of the loop: leaky {lpeak:.1f} MiB, "
            f"fixed {fpeak:.1f} MiB",
            f"phase kept (informative, LL102's effect): keeping the softmax outputs "
            f"({kept:.2f} MiB of data) kept every batch's graph: {last(k_l):.1f} MiB after "
            f"{len(k_l)} batches (fixed: {last(k_f):.1f} MiB); peak {mem} above the start: "
            f"leaky {leaky.scalars.get('kept_peak_above_start_mib', 0):.1f} MiB, fixed "
            f"{fixed.scalars.get('kept_peak_above_start_mib', 0):.1f} MiB",
        ],
        panels=[Panel("phase main: peak held by autograd", "saved_peak_mib", "MiB",
                      threshold=1.0, threshold_label="verdict: leaky >= 1 MiB"),
                Panel("phase kept (informative): held by autograd", "saved_mib", "MiB",
                      phase="kept", xlabel="batch")],
    )


# --------------------------------------------------------------------------- LL102


def eval_ll102(leaky, fixed, device):
    metric = "memory reachable from the accumulator, per iteration"
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad
    t_steps = series(leaky, "step", "train")
    t_nodes = series(leaky, "graph_nodes", "train")
    t_heap = series(leaky, "heap_mib", "train")
    t_rss = series(leaky, "rss_mib", "train")
    t_saved = series(leaky, "saved_mib", "train")
    f_heap = series(fixed, "heap_mib", "train")
    f_steps = series(fixed, "step", "train")
    nodes_per_iter = slope(t_nodes, t_steps)
    heap_per_iter_kib = slope(t_heap, t_steps) * 1024
    rss_per_iter_kib = slope(t_rss, t_steps) * 1024
    fixed_heap_per_iter_kib = slope(f_heap, f_steps) * 1024 if f_heap else 0.0
    m_saved = series(leaky, "saved_mib", "monitor")
    fm_saved = series(fixed, "saved_mib", "monitor")
    m_per_batch = slope(m_saved)
    ok = (nodes_per_iter >= 1 and heap_per_iter_kib > 4 * max(fixed_heap_per_iter_kib, 0.05)
          and m_per_batch >= 0.5 and max(fm_saved, default=0.0) <= 0.05
          and max(series(fixed, "graph_nodes", "train"), default=0) == 0)
    notes = []
    if max(t_saved, default=0.0) <= 0.05:
        notes.append(
            f"In a loop that calls backward() every iteration, backward() frees the saved "
            f"activations; what `running_loss += loss` keeps is the chain of autograd nodes "
            f"({nodes_per_iter:.0f} nodes/iteration here, {heap_per_iter_kib:.1f} KiB/iteration "
            f"of live malloc memory; RSS grew {rss_per_iter_kib:.1f} KiB/iteration with heap "
            f"fragmentation), not \"every saved activation\". The activations stay reachable "
            f"only when the accumulated value is never back-propagated (phase monitor: "
            f"{m_per_batch:.2f} MiB per batch).")
    return Outcome(
        verdict(ok), metric,
        f"+{m_per_batch:.2f} MiB/batch (no backward); +{heap_per_iter_kib:.1f} KiB/iter "
        f"(backward each iter)",
        f"+{slope(fm_saved):.2f} MiB/batch; {fixed_heap_per_iter_kib:+.2f} KiB/iter",
        ">= 0.5 MiB/batch and >= 1 node/iter in leaky, flat in fixed",
        numbers={"monitor_saved_per_batch_mib": m_per_batch,
                 "monitor_saved_after_mib": last(m_saved),
                 "train_nodes_per_iter": nodes_per_iter,
                 "train_heap_per_iter_kib": heap_per_iter_kib,
                 "train_rss_per_iter_kib": rss_per_iter_kib,
                 "train_saved_max_mib": max(t_saved, default=0.0),
                 "fixed_train_heap_per_iter_kib": fixed_heap_per_iter_kib,
                 "train_iters": last(t_steps, 0), "train_nodes_final": last(t_nodes, 0)},
        details=[
            f"phase monitor (`total = total + criterion(model(x), y)`, no backward): "
            f"{m_per_batch:.2f} MiB of saved activations per batch stay reachable, "
            f"{last(m_saved):.1f} MiB after {len(m_saved)} batches; fixed: "
            f"{max(fm_saved, default=0):.2f} MiB",
            f"phase train (`running_loss += loss` after backward/step): "
            f"{last(t_nodes, 0)} autograd nodes after {last(t_steps, 0)} iterations "
            f"({nodes_per_iter:.1f}/iter), live heap +{heap_per_iter_kib:.1f} KiB/iter, "
            f"RSS +{rss_per_iter_kib:.1f} KiB/iter, saved activations "
            f"{max(t_saved, default=0):.2f} MiB; fixed: heap "
            f"{fixed_heap_per_iter_kib:+.2f} KiB/iter",
        ],
        claim_notes=notes,
        panels=[Panel("phase monitor: activations held", "saved_mib", "MiB", phase="monitor",
                      xlabel="batch"),
                Panel("phase train: live heap (malloc) growth", "heap_mib",
                      "MiB since the first iteration", phase="train", relative=True)],
    )


# --------------------------------------------------------------------------- LL103


def eval_ll103(leaky, fixed, device):
    metric = "graph memory and backward time per chunk (TBPTT)"
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad
    ls = series(leaky, "saved_mib", "accumulate")
    fs = series(fixed, "saved_mib", "accumulate")
    lt = series(leaky, "backward_ms", "accumulate")
    ft = series(fixed, "backward_ms", "accumulate")
    # fastest of the first and of the last quarter: timing noise (other load on the
    # machine) only ever adds time, so the minimum is the robust estimate
    k = max(3, len(lt) // 4)

    def ratio(ts):
        if len(ts) < 2 * k:
            return 0.0
        return min(ts[-k:]) / max(min(ts[:k]), 1e-6)

    l_ratio, f_ratio = ratio(lt), ratio(ft)
    per_chunk = slope(ls)
    leaky_err = leaky.errors.get("accumulate")
    e1 = leaky.errors.get("step_each_chunk")
    e2 = leaky.errors.get("step_each_chunk_retain_graph")
    # chunks completed before the error (one sample per completed chunk)
    d1 = len(series(leaky, "step", "step_each_chunk"))
    d2 = len(series(leaky, "step", "step_each_chunk_retain_graph"))
    f_done = len(series(fixed, "step", "step_each_chunk"))
    r_growth = slope(series(leaky, "saved_mib", "step_each_chunk_retain_graph"))
    # LibTorch (C++) with torch::optim::SGD (the pair uses it): SGD updates the weights through .data(), whose version
    # counter autograd does not check, so with retain_graph the usual loop does not fail
    # in chunk 2 as in Python: it runs, and the retained graph grows by a chunk per step
    cpp = getattr(leaky, "lang", "python") == "cpp"
    if cpp:
        second = bool(e1) and d1 == 1 and not e2 and d2 >= 3 and r_growth >= 0.05
        claim = ("backward()+step() every chunk: leaky fails in chunk 2 without "
                 "retain_graph, runs and grows >= 0.05 MiB/chunk with it (LibTorch)")
    else:
        second = bool(e1) and bool(e2) and d1 == 1 and d2 == 1
        claim = ("backward()+step() every chunk: leaky fails in chunk 2, with and without "
                 "retain_graph=True")
    grows = (per_chunk >= 0.05 and l_ratio >= 3 and max(fs, default=0.0) <= 0.05
             and f_ratio <= 2 and not leaky_err)
    ok = second and grows and not fixed.errors and f_done >= 2

    def crash(err, done):
        return f"fails in chunk {done + 1}" if err else f"no error in {done} chunks"

    r_text = crash(e2, d2) + ("" if e2 else f", +{r_growth:.3f} MiB/chunk")
    return Outcome(
        verdict(ok), metric,
        f"step each chunk: {crash(e1, d1)} ({r_text} with retain_graph); "
        f"no step: +{per_chunk:.3f} MiB/chunk, backward x{l_ratio:.1f}",
        f"step each chunk: {crash(fixed.errors.get('step_each_chunk'), f_done)}; "
        f"no step: +{slope(fs):.3f} MiB/chunk, backward x{f_ratio:.1f}",
        claim + ", fixed runs; gradients accumulated without step(): leaky "
        ">= 0.05 MiB/chunk and backward time x3 (last vs first quarter), fixed flat (<= x2)",
        numbers={"saved_per_chunk_mib": per_chunk, "saved_after_mib": last(ls),
                 "chunks": len(ls), "backward_ms_first": min(lt[:k]) if lt else 0,
                 "backward_ms_last": min(lt[-k:]) if lt else 0,
                 "backward_growth_leaky": l_ratio, "backward_growth_fixed": f_ratio,
                 "step_each_chunk_error": err_text(e1) if e1 else None,
                 "step_each_chunk_chunks_done_leaky": d1,
                 "step_each_chunk_retain_graph_chunks_done_leaky": d2,
                 "step_each_chunk_retain_graph_saved_per_chunk_mib": r_growth,
                 "step_each_chunk_chunks_done_fixed": f_done,
                 "step_each_chunk_retain_graph_error": err_text(e2) if e2 else None},
        details=[
            f"phase step_each_chunk (leaky, backward() + step() every chunk): "
            f"{crash(e1, d1)}: {err_text(e1)}",
            f"phase step_each_chunk_retain_graph (leaky, the same with retain_graph=True): "
            f"{r_text}: {err_text(e2)}",
            f"phase step_each_chunk (fixed): {crash(fixed.errors.get('step_each_chunk'), f_done)}",
            f"phase accumulate (no step() between backward() calls): the retained graph "
            f"grew {per_chunk:.3f} MiB per chunk "
            f"({last(ls):.2f} MiB after {len(ls)} chunks); backward time (fastest of the "
            f"first / last {k} chunks) went from {min(lt[:k]) if lt else 0:.1f} ms to "
            f"{min(lt[-k:]) if lt else 0:.1f} ms (x{l_ratio:.1f}); fixed: "
            f"{max(fs, default=0):.2f} MiB, x{f_ratio:.1f}",
        ],
        text_panel=[f"leaky, step each chunk: {crash(e1, d1)}: {err_text(e1)}",
                    f"leaky, step each chunk, retain_graph=True: {r_text}: "
                    f"{err_text(e2)}",
                    f"fixed, step each chunk: "
                    f"{crash(fixed.errors.get('step_each_chunk'), f_done)}"],
        panels=[Panel("phase accumulate: graph held", "saved_mib", "MiB", phase="accumulate",
                      xlabel="chunk", threshold_slope=0.05,
                      threshold_label="verdict: leaky grows >= 0.05 MiB/chunk"),
                Panel("phase accumulate: backward time", "backward_ms", "ms",
                      phase="accumulate", xlabel="chunk")],
    )


# --------------------------------------------------------------------------- LL104


def eval_ll104(leaky, fixed, device):
    metric = "error on entering the with block"
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad
    err = leaky.errors.get("evaluate")
    where = (err or {}).get("where") or {}
    done_leaky = leaky.scalars.get("batches_evaluated", 0)
    done_fixed = fixed.scalars.get("batches_evaluated", 0)
    ok = (bool(err) and err.get("type") in ("TypeError", "AttributeError")
          and "no_grad" in (where.get("code") or "") and done_leaky == 0
          and not fixed.errors and done_fixed == fixed.doc.get("iters"))
    f_err = fixed.errors.get("evaluate")
    return Outcome(
        verdict(ok), metric,
        f"{err.get('type') if err else 'no error'} after {done_leaky} batches",
        f"{f_err.get('type') if f_err else 'no error'}, {done_fixed} batches",
        "leaky raises on entry (0 batches), fixed completes",
        numbers={"leaky_error": err, "batches_leaky": done_leaky, "batches_fixed": done_fixed},
        details=[f"leaky: {err_text(err)}; {done_leaky} batches evaluated",
                 f"fixed: {err_text(f_err)}; {done_fixed} batches evaluated"],
        text_panel=[f"leaky: {err_text(err)}", f"fixed: {err_text(f_err)}, {done_fixed} batches"],
    )


# --------------------------------------------------------------------------- LL105


def eval_ll105(leaky, fixed, device):
    metric = "hooks on the module, hook calls per forward and memory their closures keep"
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad
    lh, fh = series(leaky, "hooks"), series(fixed, "hooks")
    lc, fc = series(leaky, "hook_calls_per_forward"), series(fixed, "hook_calls_per_forward")
    lk, fk = series(leaky, "hook_retained_bytes"), series(fixed, "hook_retained_bytes")
    per_iter = slope(lh)
    kept_per_iter = slope(lk) / 1024
    ok = (len(lh) >= 3 and per_iter >= 0.9 and last(lc, 0) >= 0.9 * len(lc)
          and kept_per_iter > 0 and bool(fh) and max(fh) <= 1 and max(fc, default=2) <= 1
          and max(fk, default=1) == 0)
    return Outcome(
        verdict(ok), metric,
        f"{last(lh, 0)} hooks, {last(lc, 0)} calls per forward, {last(lk, 0) / 1024:.0f} KiB kept",
        f"{max(fh, default=0)} hooks, {max(fc, default=0)} calls per forward, "
        f"{max(fk, default=0) / 1024:.0f} KiB kept",
        ">= 0.9 more hooks per iteration and every hook called on every forward in leaky; "
        "fixed <= 1 hook, <= 1 call, nothing kept",
        numbers={"hooks_leaky": last(lh, 0), "hooks_fixed": max(fh, default=0),
                 "hooks_per_iter_leaky": per_iter,
                 "calls_per_forward_last_leaky": last(lc, 0),
                 "calls_per_forward_max_fixed": max(fc, default=0),
                 "retained_kib_leaky": last(lk, 0) / 1024,
                 "retained_kib_per_iter_leaky": kept_per_iter,
                 "retained_kib_fixed": max(fk, default=0) / 1024, "iterations": len(lh)},
        details=[f"after {len(lh)} iterations the module has {last(lh, 0)} forward hooks in "
                 f"leaky ({per_iter:.2f} more per iteration), and the last forward ran "
                 f"{last(lc, 0)} of them; fixed: {max(fh, default=0)} hooks left after an "
                 f"iteration at most, {max(fc, default=0)} hook call per forward at most",
                 f"tensors kept alive by the hooks' closures: leaky {last(lk, 0) / 1024:.0f} KiB "
                 f"(+{kept_per_iter:.1f} KiB per iteration), fixed "
                 f"{max(fk, default=0) / 1024:.0f} KiB"],
        panels=[Panel("forward hooks on the module", "hooks", "hooks"),
                Panel("kept by hook closures", "hook_retained_bytes", "bytes", min_span=1024)],
    )

# --------------------------------------------------------------------------- LL201


def eval_ll201(leaky, fixed, device):
    metric = "backward() results summed in .grad / final loss"
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad
    lb, fb = series(leaky, "batches_in_grad"), series(fixed, "batches_in_grad")
    ll, fl = series(leaky, "loss"), series(fixed, "loss")
    lg, fg = series(leaky, "grad_bytes"), series(fixed, "grad_bytes")
    lh = series(leaky, "heap_mib")
    ratio = series(leaky, "applied_over_fresh")
    gaf_l = series(leaky, "grads_at_forward_bytes")
    gaf_f = series(fixed, "grads_at_forward_bytes")
    initial = leaky.scalars.get("initial_loss", float("nan"))
    heap_growth_kib = (last(lh) - lh[len(lh) // 4]) * 1024 if lh else 0.0
    wrong = last(lb, 0) == len(lb) and max(fb, default=0) == 1 and last(ll) > 5 * last(fl)
    fixed_size = min(lg) == max(lg) and abs(heap_growth_kib) < 256
    ok = wrong and fixed_size
    notes = [
        f"Confirmed as stated: gradient buffers stay {max(lg, default=0)} bytes and the live "
        f"heap moved {heap_growth_kib:+.1f} KiB over the last three quarters of the run; "
        f"memory does not grow. The damage is the update: .grad held the sum of {last(lb, 0)} "
        f"batches at the end.",
    ]
    if ratio:
        notes.append(
            f"\"a growing sum\": the number of summed gradients grows every step, but the "
            f"norm of the applied sum does not grow steadily (it was "
            f"{statistics.median(ratio):.1f}x the fresh gradient's norm in the median, "
            f"max {max(ratio):.1f}x): gradients of different batches partly cancel; the "
            f"result is an undamped oscillation (loss {last(ll):.3f} vs {last(fl):.3f}).")
    return Outcome(
        verdict(ok), metric,
        f"{last(lb, 0)} batches, loss {last(ll):.3f}",
        f"{last(fb, 0)} batch, loss {last(fl):.3f}",
        "leaky .grad sums all batches and final loss > 5x fixed; gradient bytes constant",
        numbers={"batches_in_grad_leaky": last(lb, 0), "batches_in_grad_fixed": last(fb, 0),
                 "initial_loss": initial, "final_loss_leaky": last(ll),
                 "final_loss_fixed": last(fl), "grad_bytes_leaky": max(lg, default=0),
                 "grad_bytes_fixed": max(fg, default=0),
                 "heap_growth_kib_leaky": heap_growth_kib,
                 "applied_over_fresh_median": statistics.median(ratio) if ratio else None,
                 "grads_alive_at_forward_bytes_leaky": max(gaf_l, default=0),
                 "grads_alive_at_forward_bytes_fixed": max(gaf_f, default=0)},
        details=[
            f"loss (full data set) from {initial:.3f}: leaky ends at {last(ll):.3f}, fixed at "
            f"{last(fl):.3f}",
            f".grad held the sum of {last(lb, 0)} backward() results at the last step "
            f"(fixed: {last(fb, 0)})",
            f"gradient buffers: {min(lg, default=0)}..{max(lg, default=0)} bytes in leaky "
            f"(fixed size), live heap {heap_growth_kib:+.1f} KiB",
            f"gradient memory alive during the forward pass: leaky {max(gaf_l, default=0)} "
            f"bytes, fixed (zero_grad(set_to_none=True)) {max(gaf_f, default=0)} bytes",
        ],
        claim_notes=notes,
        panels=[Panel("loss on the training set", "loss", "MSE"),
                Panel("backward() results summed in .grad", "batches_in_grad", "batches"),
                Panel("live heap (malloc)", "heap_mib", "MiB")],
    )


# --------------------------------------------------------------------------- LL202


def eval_ll202(leaky, fixed, device):
    metric = "parameter change applied by step() / final loss"
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad
    lc, fc = series(leaky, "param_change"), series(fixed, "param_change")
    ll, fl = series(leaky, "loss"), series(fixed, "loss")
    initial = leaky.scalars.get("initial_loss", float("nan"))
    ok = (sum(lc) == 0.0 and last(ll) >= 0.99 * initial and sum(fc) > 0
          and last(fl) <= 0.5 * fixed.scalars.get("initial_loss", initial))
    return Outcome(
        verdict(ok), metric,
        f"total change {sum(lc):.3g}, loss {last(ll):.3f}",
        f"total change {sum(fc):.3g}, loss {last(fl):.3f}",
        "leaky parameters never change and loss stays >= 99% of initial; fixed loss <= 50%",
        numbers={"param_change_total_leaky": sum(lc), "param_change_total_fixed": sum(fc),
                 "initial_loss": initial, "final_loss_leaky": last(ll),
                 "final_loss_fixed": last(fl), "steps": len(lc)},
        details=[f"sum over {len(lc)} steps of the parameter change norm: leaky {sum(lc):.3g}, "
                 f"fixed {sum(fc):.3g}",
                 f"loss from {initial:.3f}: leaky {last(ll):.3f}, fixed {last(fl):.3f}"],
        panels=[Panel("loss on the training set", "loss", "MSE"),
                Panel("parameter change per step", "param_change", "L2 norm")],
    )


# --------------------------------------------------------------------------- LL205


def eval_ll205(leaky, fixed, device):
    metric = "dropout and batch-norm during training after the first validation"
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad

    def after_first(res, key):
        """Values of the steps after the first validation (epoch >= 1)."""
        return [v for e, v in zip(series(res, "epoch"), series(res, key)) if e >= 1]

    def first(res, key):
        return [v for e, v in zip(series(res, "epoch"), series(res, key)) if e == 0]

    ld, fd = after_first(leaky, "dropout_dropped_fraction"), after_first(fixed, "dropout_dropped_fraction")
    lb, fb = after_first(leaky, "bn_running_mean_change"), after_first(fixed, "bn_running_mean_change")
    lt, ft = after_first(leaky, "training_flag"), after_first(fixed, "training_flag")
    d0 = first(leaky, "dropout_dropped_fraction")
    ok = (bool(ld) and bool(fd) and max(ld) <= 0.05 and min(fd) >= 0.3
          and max(lb) <= 1e-9 and min(fb) > 1e-6 and max(lt) == 0 and min(ft) == 1
          and bool(d0) and min(d0) >= 0.3)
    return Outcome(
        verdict(ok), metric,
        f"dropout zeroes {max(ld, default=0):.1%}, batch-norm change {max(lb, default=0):.4f}",
        f"dropout zeroes {min(fd, default=0):.1%}-{max(fd, default=0):.1%}, batch-norm change "
        f"{min(fb, default=0):.4f}-{max(fb, default=0):.4f}",
        "after the first validation: leaky dropout zeroes <= 5% and batch-norm's running mean "
        "never changes, training flag off; fixed dropout >= 30%, running mean changes",
        numbers={"dropout_dropped_first_epoch": statistics.median(d0) if d0 else None,
                 "dropout_dropped_later_max_leaky": max(ld, default=0),
                 "dropout_dropped_later_min_fixed": min(fd, default=0),
                 "bn_change_later_max_leaky": max(lb, default=0),
                 "bn_change_later_min_fixed": min(fb, default=0),
                 "steps_after_first_validation": len(ld)},
        details=[f"first epoch (before any validation): dropout zeroed "
                 f"{statistics.median(d0) if d0 else 0:.1%} of its non-zero inputs in both",
                 f"after the first validation ({len(ld)} steps): leaky model.training "
                 f"{'False' if max(lt, default=1) == 0 else 'True at times'}, dropout zeroed at "
                 f"most {max(ld, default=0):.1%}, batch-norm running mean changed at most "
                 f"{max(lb, default=0):.4f} per step; fixed: dropout "
                 f"{min(fd, default=0):.1%}-{max(fd, default=0):.1%}, running mean "
                 f"{min(fb, default=0):.4f}-{max(fb, default=0):.4f} per step"],
        panels=[Panel("share dropout zeroes", "dropout_dropped_fraction", "fraction of units",
                      threshold=0.3, threshold_label="verdict: fixed >= 0.3, leaky <= 0.05"),
                Panel("batch-norm running mean change", "bn_running_mean_change",
                      "L2 norm per step", min_span=0.1)],
    )


# --------------------------------------------------------------------------- LL206


def eval_ll206(leaky, fixed, device):
    metric = "SGD update against the update of one batch of the same samples"
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad

    def ratios(res):
        return [u / b for u, b in zip(series(res, "update_norm", "sgd"),
                                      series(res, "big_batch_update_norm", "sgd")) if b > 0]

    lr_, fr_ = ratios(leaky), ratios(fixed)
    lm = statistics.median(lr_) if lr_ else 0.0
    fm = statistics.median(fr_) if fr_ else 0.0
    la, fa = series(leaky, "update_norm", "adam"), series(fixed, "update_norm", "adam")
    adam = [a / b for a, b in zip(la, fa) if b > 0]
    ok = bool(lr_) and bool(fr_) and lm >= 4.0 and 0.8 <= fm <= 1.25
    return Outcome(
        verdict(ok), metric, f"{lm:.2f}x", f"{fm:.2f}x",
        "leaky SGD update >= 4x the one-batch update, fixed 0.8x-1.25x",
        numbers={"sgd_update_ratio_leaky": lm, "sgd_update_ratio_fixed": fm,
                 "sgd_updates": len(lr_),
                 "adam_update_leaky_over_fixed": statistics.median(adam) if adam else None},
        details=[f"SGD: each update was {lm:.2f}x (median of {len(lr_)}) the update one batch of "
                 f"the same samples makes; fixed {fm:.2f}x",
                 f"Adam (informative): leaky's update / fixed's update, median "
                 f"{statistics.median(adam) if adam else float('nan'):.3f} (Adam divides by its "
                 f"running estimate of the gradient's scale)"],
        panels=[Panel("SGD update size", "update_norm", "L2 norm", phase="sgd",
                      xlabel="update", min_span=0.1),
                Panel("Adam update size (informative)", "update_norm", "L2 norm",
                      phase="adam", xlabel="update", min_span=0.01)],
    )

# --------------------------------------------------------------------------- LL301


def eval_ll301(leaky, fixed, device):
    metric = "peak memory while the next model is built"
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad
    model = leaky.scalars.get("model_mib", 0.0) or 1e-9
    lp = series(leaky, "peak_during_build_mib")[1:]
    fp = series(fixed, "peak_during_build_mib")[1:]
    l_x, f_x = max(lp, default=0) / model, max(fp, default=0) / model
    ok = l_x >= 1.7 and f_x <= 1.4
    numbers = {"model_mib": model, "peak_build_mib_leaky": max(lp, default=0),
               "peak_build_mib_fixed": max(fp, default=0), "peak_in_models_leaky": l_x,
               "peak_in_models_fixed": f_x}
    details = [f"model parameters: {model:.1f} MiB; peak while building models 2..n: leaky "
               f"{max(lp, default=0):.1f} MiB ({l_x:.2f} models), fixed "
               f"{max(fp, default=0):.1f} MiB ({f_x:.2f} models)"]
    notes = []
    if device == "cuda":
        lc = leaky.scalars.get("reserved_minus_allocated_mib")
        fc = fixed.scalars.get("reserved_minus_allocated_mib")
        if lc is not None and fc is not None:
            numbers.update(cached_after_mib_leaky=lc, cached_after_mib_fixed=fc)
            details.append(f"cached (reserved - allocated) after the loop: leaky {lc:.1f} MiB, "
                           f"fixed {fc:.1f} MiB")
            ok = ok and lc >= 0.8 * model and fc <= 0.2 * model

    return Outcome(
        verdict(ok), metric, f"{l_x:.2f} x model", f"{f_x:.2f} x model",
        "leaky peak >= 1.7 models, fixed <= 1.4 models"
        + ("; cached >= 0.8 model vs <= 0.2" if device == "cuda" else ""),
        numbers=numbers, details=details, claim_notes=notes,
        panels=[Panel("peak while building the next model", "peak_during_build_mib", "MiB",
                      xlabel="model", threshold=1.7 * model,
                      threshold_label="verdict: leaky >= 1.7 models",
                      ref=model, ref_label=f"one model ({model:.1f} MiB)")],
    )


# --------------------------------------------------------------------------- LL302


def eval_ll302(leaky, fixed, device):
    metric = "memory still reserved after the release sequence"
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad
    model = leaky.scalars.get("model_mib", 0.0) or 1e-9

    def cached(res):
        r = series(res, "reserved_after_release_mib")
        a = series(res, "allocated_after_release_mib")
        return [x - y for x, y in zip(r, a)]

    lc, fc = cached(leaky), cached(fixed)
    ok = bool(lc) and min(lc) >= 0.8 * model and max(fc, default=1e9) <= 0.2 * model
    return Outcome(
        verdict(ok), metric, mib(min(lc, default=0)), mib(max(fc, default=0)),
        "leaky keeps >= 0.8 model cached, fixed <= 0.2 model",
        numbers={"model_mib": model, "cached_after_release_mib_leaky": lc,
                 "cached_after_release_mib_fixed": fc},
        details=[f"model {model:.1f} MiB; reserved but unused after `empty_cache(); del model`: "
                 f"{min(lc, default=0):.1f} MiB; after `del model; gc.collect(); "
                 f"empty_cache()`: {max(fc, default=0):.1f} MiB"],
        panels=[Panel("reserved after the release", "reserved_after_release_mib", "MiB",
                      xlabel="model")],
    )


# --------------------------------------------------------------------------- LL303


def eval_ll303(leaky, fixed, device):
    metric = "device frees per iteration / median iteration time / peak reserved"
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad
    lt = series(leaky, "iter_ms")[5:]
    ft = series(fixed, "iter_ms")[5:]
    lm = statistics.median(lt) if lt else 0.0
    fm = statistics.median(ft) if ft else 0.0
    # cudaFree calls of the caching allocator (memory_stats "segment.all.freed"), per
    # iteration after the warm-up
    lf, ff = series(leaky, "segments_freed")[5:], series(fixed, "segments_freed")[5:]
    l_frees = slope(lf) if len(lf) >= 2 else 0.0
    f_frees = slope(ff) if len(ff) >= 2 else 0.0
    lpeak = leaky.scalars.get("max_reserved_mib", 0.0)
    fpeak = fixed.scalars.get("max_reserved_mib", 0.0)
    l_alloc = leaky.scalars.get("max_allocated_mib", 0.0)
    f_alloc = fixed.scalars.get("max_allocated_mib", 0.0)
    ok = (l_frees >= 1.0 and f_frees <= 0.1 and lm >= 1.1 * fm
          and fpeak > 0 and lpeak >= 0.9 * fpeak)
    return Outcome(
        verdict(ok), metric,
        f"{l_frees:.1f} frees/iter, {lm:.2f} ms, peak {lpeak:.0f} MiB",
        f"{f_frees:.1f} frees/iter, {fm:.2f} ms, peak {fpeak:.0f} MiB",
        "leaky >= 1 cudaFree per iteration, fixed <= 0.1; leaky >= 1.1x slower; leaky's "
        "peak reserved not below 0.9x fixed's",
        numbers={"segments_freed_per_iter_leaky": l_frees,
                 "segments_freed_per_iter_fixed": f_frees,
                 "iter_ms_leaky": lm, "iter_ms_fixed": fm,
                 "max_reserved_mib_leaky": lpeak, "max_reserved_mib_fixed": fpeak,
                 "max_allocated_mib_leaky": l_alloc, "max_allocated_mib_fixed": f_alloc,
                 "alloc_retries_leaky": leaky.scalars.get("alloc_retries"),
                 "alloc_retries_fixed": fixed.scalars.get("alloc_retries")},
        details=[f"segments returned to the device (cudaFree) per iteration: leaky "
                 f"{l_frees:.1f}, fixed {f_frees:.1f}",
                 f"median iteration time: leaky {lm:.2f} ms, fixed {fm:.2f} ms "
                 f"(x{lm / max(fm, 1e-9):.2f})",
                 f"peak reserved: leaky {lpeak:.1f} MiB, fixed {fpeak:.1f} MiB; peak "
                 f"allocated: leaky {l_alloc:.1f} MiB, fixed {f_alloc:.1f} MiB"],
        panels=[Panel("iteration time", "iter_ms", "ms"),
                Panel("device frees (cudaFree), cumulative", "segments_freed", "segments"),
                Panel("reserved", "reserved_mib", "MiB")],
    )


# --------------------------------------------------------------------------- LL304


def eval_ll304(leaky, fixed, device):
    metric = "memory of the failed attempt alive when the retry starts"
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad
    lr = series(leaky, "saved_mib", "retry")
    fr = series(fixed, "saved_mib", "retry")
    lh = series(leaky, "heap_mib", "retry")
    fh = series(fixed, "heap_mib", "retry")

    def heap_held(res):
        """Live heap at the retry minus the live heap after the last completed step."""
        retry_step = last(series(res, "step", "retry"), None)
        before = [h for st, h in zip(series(res, "step"), series(res, "heap_mib"))
                  if retry_step is not None and st < retry_step]
        at = last(series(res, "heap_mib", "retry"), None)
        return at - before[-1] if before and at is not None else None

    l_held_heap, f_held_heap = heap_held(leaky), heap_held(fixed)
    step_peak = leaky.scalars.get("step_peak_mib", 0.0)
    budget = leaky.scalars.get("budget_mib", 0.0)
    l_err = leaky.errors.get("train")
    f_err = fixed.errors.get("train")
    ok = (bool(lr) and bool(fr) and lr[0] >= max(5.0, 0.25 * step_peak) and fr[0] <= 1.0
          and not f_err)
    leaky_steps = leaky.scalars.get("steps_done", 0)
    fixed_steps = fixed.scalars.get("steps_done", 0)
    return Outcome(
        verdict(ok), metric, mib(last(lr)), mib(last(fr)),
        ">= 25% of a step's peak held at the retry in leaky, <= 1 MiB in fixed",
        numbers={"held_at_retry_mib_leaky": last(lr), "held_at_retry_mib_fixed": last(fr),
                 "heap_at_retry_mib_leaky": last(lh), "heap_at_retry_mib_fixed": last(fh),
                 "heap_held_at_retry_mib_leaky": l_held_heap,
                 "heap_held_at_retry_mib_fixed": f_held_heap,
                 "step_peak_mib": step_peak, "budget_mib": budget,
                 "steps_done_leaky": leaky_steps, "steps_done_fixed": fixed_steps,
                 "leaky_retry_error": err_text(l_err) if l_err else None},
        details=[
            f"memory budget {budget:.1f} MiB (1.5x the {step_peak:.1f} MiB peak of a normal "
            f"step); one batch of double size runs out of memory",
            f"when the retry starts, autograd still holds {last(lr):.1f} MiB of the failed "
            f"attempt in leaky (traceback -> frames -> partial graph), {last(fr):.1f} MiB in "
            f"fixed; live heap above the last completed step: leaky "
            f"{l_held_heap or 0:.1f} MiB, fixed {f_held_heap or 0:.1f} MiB",
            "outcome: leaky "
            f"{'retry failed again: ' + err_text(l_err) if l_err else 'retry succeeded'}"
            f" ({leaky_steps} of {leaky.doc.get('iters')} steps done); fixed "
            f"{'failed: ' + err_text(f_err) if f_err else 'retry succeeded'} "
            f"({fixed_steps} of {fixed.doc.get('iters')} steps)",
        ],
        bars=[("autograd-saved at retry", last(lr), last(fr), "MiB"),
              ("heap held at retry", l_held_heap or 0.0, f_held_heap or 0.0, "MiB"),
              ("memory budget", budget, fixed.scalars.get("budget_mib", 0.0), "MiB")],
        text_panel=[f"held at retry start: leaky {last(lr):.1f} MiB, fixed {last(fr):.1f} MiB",
                    f"leaky: {'retry failed: ' + err_text(l_err) if l_err else 'retry ok'}; "
                    f"fixed: {'retry failed: ' + err_text(f_err) if f_err else 'retry ok'}"],
    )


# --------------------------------------------------------------------------- LL401


def eval_ll401(leaky, fixed, device):
    metric = "error at DataLoader construction"
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad
    err = leaky.errors.get("construct_and_iterate")
    where = (err or {}).get("where") or {}
    epochs = len(series(fixed, "step"))
    ok = (bool(err) and err.get("type") == "ValueError" and "DataLoader" in
          (where.get("code") or "") and not fixed.errors and epochs == fixed.doc.get("iters"))
    f_err = fixed.errors.get("construct_and_iterate")
    return Outcome(
        verdict(ok), metric, f"{err.get('type') if err else 'no error'}",
        f"{f_err.get('type') if f_err else 'no error'}, {epochs} epochs",
        "leaky raises ValueError in DataLoader(...), fixed iterates",
        numbers={"leaky_error": err, "fixed_epochs": epochs,
                 "fixed_workers": max(series(fixed, "workers"), default=0)},
        details=[f"leaky: {err_text(err)}",
                 f"fixed: {err_text(f_err)}; {epochs} epochs with {max(series(fixed, 'workers'), default=0)} "
                 f"persistent workers"],
        text_panel=[f"leaky: {err_text(err)}", f"fixed: {err_text(f_err)}, {epochs} epochs"],
    )


# --------------------------------------------------------------------------- LL402


def eval_ll402(leaky, fixed, device):
    metric = "host RAM of the loader (workers' private pages + batches in shared memory)"
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad
    lh, fh = series(leaky, "host_mib"), series(fixed, "host_mib")
    lshm, fshm = series(leaky, "shmem_mib"), series(fixed, "shmem_mib")
    lw = series(leaky, "workers_private_dirty_mib")
    fw = series(fixed, "workers_private_dirty_mib")
    nl = leaky.scalars.get("num_workers", 0)
    nf = fixed.scalars.get("num_workers", 0)
    lpeak, fpeak = max(lh, default=0), max(fh, default=0)
    ok = lpeak >= 2 * fpeak and lpeak - fpeak >= 50
    numbers = {"host_peak_mib_leaky": max(lh, default=0), "host_peak_mib_fixed": max(fh, default=0),
               "shmem_peak_mib_leaky": max(lshm, default=0),
               "shmem_peak_mib_fixed": max(fshm, default=0),
               "inflight_mib_leaky": leaky.scalars.get("inflight_mib"),
               "inflight_mib_fixed": fixed.scalars.get("inflight_mib"),
               "batch_mib": leaky.scalars.get("batch_mib"),
               "workers_private_mib_leaky": max(lw, default=0),
               "workers_private_mib_fixed": max(fw, default=0),
               "per_worker_private_mib": max(lw, default=0) / max(nl, 1)}
    details = [
        f"leaky ({nl} workers x prefetch {leaky.scalars.get('prefetch_factor')} = "
        f"{leaky.scalars.get('inflight_mib', 0):.0f} MiB of batches in flight): peak "
        f"{max(lh, default=0):.1f} MiB host RAM (at most {max(lshm, default=0):.1f} MiB of "
        f"batches in shared memory, {max(lw, default=0):.1f} MiB private pages of the workers)",
        f"fixed ({nf} workers x prefetch {fixed.scalars.get('prefetch_factor')} = "
        f"{fixed.scalars.get('inflight_mib', 0):.0f} MiB): peak {max(fh, default=0):.1f} MiB "
        f"(at most {max(fshm, default=0):.1f} MiB in shared memory, "
        f"{max(fw, default=0):.1f} MiB private pages of the workers)",
    ]
    notes = [f"Beyond workers x prefetch x batch size, each worker process also held about "
             f"{max(lw, default=0) / max(nl, 1):.1f} MiB of private (copied) pages on this "
             f"setup; the message's host-RAM arithmetic is a lower bound."]
    if device == "cuda":
        lc, fc = leaky.scalars.get("cuda_allocated_mib"), fixed.scalars.get("cuda_allocated_mib")
        batch = leaky.scalars.get("batch_mib") or 0.0
        numbers.update(cuda_allocated_mib_leaky=lc, cuda_allocated_mib_fixed=fc)
        # "not GPU memory": the leaky loader's extra batches in flight must not show up
        # on the device (allowance: one batch, for the batch being trained on)
        gpu_same = lc is not None and fc is not None and lc - fc <= max(batch, 1.0)
        ok = ok and gpu_same
        details.append(f"GPU memory allocated by the training process: leaky {lc} MiB, "
                       f"fixed {fc} MiB (threshold: leaky - fixed <= one batch, "
                       f"{max(batch, 1.0):.1f} MiB)")
    return Outcome(
        verdict(ok), metric, mib(max(lh, default=0)), mib(max(fh, default=0)),
        "leaky peak >= 2x fixed and >= 50 MiB more"
        + ("; GPU memory allocated: leaky - fixed <= one batch" if device == "cuda" else ""),
        numbers=numbers, details=details, claim_notes=notes,
        panels=[Panel("host RAM of the loader", "host_mib", "MiB",
                      threshold=max(2 * fpeak, fpeak + 50),
                      threshold_label="verdict: leaky peak >= max(2x, +50 MiB) fixed"),
                Panel("batches in shared memory", "shmem_mib", "MiB")],
    )


# --------------------------------------------------------------------------- LL403


def eval_ll403(leaky, fixed, device):
    metric = "private (copied) memory per DataLoader worker"
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad
    lw = series(leaky, "worker_private_dirty_mib")
    fw = series(fixed, "worker_private_dirty_mib")
    index = leaky.scalars.get("index_mib", 0.0)
    diff = last(lw) - last(fw)
    f_growth = last(fw) - fw[0] if fw else 0.0
    l_growth = last(lw) - lw[0] if lw else 0.0
    ok = bool(lw) and bool(fw) and diff >= 0.5 * index
    notes = []
    if f_growth >= 5.0:
        notes.append(
            f"The fixed program's workers also grew by {f_growth:.1f} MiB of private memory: "
            f"a full garbage collection in a worker writes the header of every object the "
            f"collector tracks (the interpreter's and torch's own objects), whatever the "
            f"dataset holds. That part is the same with any dataset; `gc.freeze()` before the "
            f"DataLoader starts its workers avoids it. The copies of the Python list come on "
            f"top of it ({diff:.1f} MiB per worker here) and do not depend on the collector.")
    return Outcome(
        verdict(ok), metric, mib(last(lw)), mib(last(fw)),
        "leaky - fixed >= 50% of the Python index's size, per worker",
        numbers={"worker_private_mib_leaky": last(lw), "worker_private_mib_fixed": last(fw),
                 "worker_growth_mib_leaky": l_growth, "worker_growth_mib_fixed": f_growth,
                 "python_index_mib": index,
                 "numpy_index_mib": fixed.scalars.get("index_mib"),
                 "samples": leaky.scalars.get("samples"),
                 "copied_fraction": diff / max(index, 1e-9)},
        details=[f"{leaky.scalars.get('samples')} annotations: Python list of dicts "
                 f"{index:.1f} MiB (sys.getsizeof) vs numpy arrays "
                 f"{fixed.scalars.get('index_mib', 0):.1f} MiB",
                 f"private dirty memory per worker at the end of the epoch: leaky "
                 f"{last(lw):.1f} MiB, fixed {last(fw):.1f} MiB: each worker copied "
                 f"{diff:.1f} MiB more than with numpy arrays "
                 f"({100 * diff / max(index, 1e-9):.0f}% of the list)",
                 f"over the epoch a worker's private memory grew by {l_growth:.1f} MiB (leaky) "
                 f"and {f_growth:.1f} MiB (fixed); neither program calls gc.freeze()"],
        claim_notes=notes,
        panels=[Panel("private memory of one worker", "worker_private_dirty_mib", "MiB",
                      threshold=(last(fw) + 0.5 * index) if fw else None,
                      threshold_label="verdict: leaky >= fixed + 50% of the list",
                      ref=index, ref_label=f"Python list ({index:.1f} MiB)")],
    )


# --------------------------------------------------------------------------- LL404


def eval_ll404(leaky, fixed, device):
    metric = "worker error with fork / device memory with spawn"
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad
    fork_err = leaky.errors.get("fork")
    f_fork_err = fixed.errors.get("fork")
    if fork_err:
        # DataLoader re-raises the worker's error with the worker traceback in the message
        cause = [ln.strip() for ln in fork_err.get("message", "").splitlines()
                 if "re-initialize CUDA" in ln]
        if cause:
            fork_err = dict(fork_err, message=cause[0])
    ls = series(leaky, "device_memory_outside_allocator_mib", "spawn")
    fs = series(fixed, "device_memory_outside_allocator_mib", "spawn")
    workers = max(series(leaky, "workers", "spawn"), default=0)
    l_dev, f_dev = max(ls, default=0.0), max(fs, default=0.0)
    spawn_err = leaky.errors.get("spawn")
    # a CUDA context takes device memory; 32 MiB per worker is far below any real context
    per_worker = 32.0
    fork_ok = (bool(fork_err) and "re-initialize CUDA" in fork_err.get("message", "")
               and not f_fork_err)
    spawn_ok = (bool(ls) and bool(fs) and workers >= 1 and l_dev >= per_worker * workers
                and f_dev <= 0.25 * l_dev and not spawn_err
                and not fixed.errors.get("spawn"))
    ok = fork_ok and spawn_ok
    return Outcome(
        verdict(ok), metric,
        f"fork: {(fork_err or {}).get('type', 'no error')}; spawn: {l_dev:.0f} MiB in "
        f"{workers} workers",
        f"fork: {(f_fork_err or {}).get('type', 'no error')}; spawn: {f_dev:.0f} MiB",
        "fork: leaky worker raises 'Cannot re-initialize CUDA in forked subprocess', fixed "
        f"runs; spawn: leaky workers hold >= {per_worker:.0f} MiB of device memory each, "
        "fixed <= 25% of leaky",
        numbers={"fork_error": err_text(fork_err) if fork_err else None,
                 "spawn_error": err_text(spawn_err) if spawn_err else None,
                 "spawn_workers": workers,
                 "spawn_device_mib_leaky": l_dev if ls else None,
                 "spawn_device_mib_fixed": f_dev if fs else None},
        details=[f"fork: leaky {err_text(fork_err)}; fixed {err_text(f_fork_err)}",
                 f"spawn: device memory outside this process's allocator while the workers "
                 f"ran (torch.cuda.mem_get_info): leaky {l_dev:.0f} MiB with {workers} "
                 f"workers, fixed {f_dev:.0f} MiB"
                 + (f" (leaky spawn error: {err_text(spawn_err)})" if spawn_err else "")],
        panels=[Panel("spawn: device memory used by workers",
                      "device_memory_outside_allocator_mib", "MiB", phase="spawn",
                      threshold=per_worker * max(workers, 1),
                      threshold_label=f"verdict: leaky >= {per_worker:.0f} MiB per worker")],
        text_panel=[f"fork, leaky: {err_text(fork_err)}", f"fork, fixed: {err_text(f_fork_err)}"],
    )


# --------------------------------------------------------------------------- LL5xx


def _children(leaky, fixed, metric, expect):
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad, None
    lcodes = leaky.scalars.get("exitcodes") or []
    fcodes = fixed.scalars.get("exitcodes") or []
    seen = expect in (leaky.stderr or "")
    ok = (bool(lcodes) and all(c not in (0, None) for c in lcodes) and seen
          and bool(fcodes) and all(c == 0 for c in fcodes)
          and len(fixed.scalars.get("results") or []) == len(fcodes))
    return None, (ok, lcodes, fcodes, seen, child_error(leaky.stderr or "", expect))


def child_error(text, expect):
    """The exception of a child's traceback on stderr, as one line ('' if not found)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("RuntimeError") or "Error: " in line[:40]:
            words = " ".join(ln.strip() for ln in lines[i:i + 4] if ln.strip())
            if expect.split()[0] in words or expect in words.replace("  ", " "):
                words = " ".join(words.split())
                end = words.find(expect)
                return words[: end + len(expect)] if end >= 0 else words[:200]
    return next((ln.strip() for ln in lines if expect in ln), "")


def eval_ll501(leaky, fixed, device):
    metric = "child exit status / error"
    bad, r = _children(leaky, fixed, metric, "Cannot re-initialize CUDA in forked subprocess")
    if bad:
        return bad
    ok, lcodes, fcodes, seen, line = r
    method = leaky.scalars.get("start_method")
    extra = []
    if method != "fork":
        extra.append(f"the leaky program's default start method here is {method!r}, not "
                     f"'fork' (Python >= 3.14 or a changed default): the pattern cannot fail")
    return Outcome(
        verdict(ok), metric, f"exit {lcodes}", f"exit {fcodes}",
        "leaky children fail with 'Cannot re-initialize CUDA', fixed children succeed",
        numbers={"exitcodes_leaky": lcodes, "exitcodes_fixed": fcodes, "child_error": line},
        details=[f"leaky children ({method}): exit codes {lcodes}; "
                 f"{line or 'message not seen'}",
                 f"fixed (spawn) children: exit codes {fcodes}, results "
                 f"{fixed.scalars.get('results')}"] + extra,
        text_panel=[f"leaky: exit {lcodes}", line[:80], f"fixed: exit {fcodes}"],
    )


def eval_ll502(leaky, fixed, device):
    metric = "child exit status / error"
    bad, r = _children(leaky, fixed, metric, "bootstrapping phase")
    if bad:
        return bad
    ok, lcodes, fcodes, seen, line = r
    errors_seen = (leaky.stderr or "").count("bootstrapping phase")
    l_pool, f_pool = leaky.scalars.get("pool_done"), fixed.scalars.get("pool_done")
    ok = ok and l_pool is False and f_pool is True
    notes = []
    if l_pool is False:
        notes.append(
            f"With multiprocessing.Pool the parent never sees the error: the pool replaces "
            f"every worker that dies while re-importing the module, each replacement dies "
            f"the same way ({errors_seen} bootstrapping RuntimeErrors on stderr in the "
            f"5 s the scenario waits) and map() never returns - the program hangs rather "
            f"than crashes. With Process the children exit with status 1.")
    def pool(done):
        return {True: "Pool.map returned", False: "Pool.map not done after 5 s"}.get(
            done, "Pool.map not measured")

    return Outcome(
        verdict(ok), metric, f"exit {lcodes}, {pool(l_pool)}", f"exit {fcodes}, {pool(f_pool)}",
        "leaky children die in bootstrap (RuntimeError) and Pool.map does not return; "
        "fixed children and Pool finish",
        numbers={"exitcodes_leaky": lcodes, "exitcodes_fixed": fcodes,
                 "results_leaky": leaky.scalars.get("results"),
                 "results_fixed": fixed.scalars.get("results"), "child_error": line,
                 "pool_done_leaky": l_pool, "pool_done_fixed": f_pool,
                 "bootstrap_errors_leaky": errors_seen},
        details=[f"Process: leaky children exit codes {lcodes}: \"{line}\"",
                 f"Process: fixed children exit codes {fcodes}, results "
                 f"{fixed.scalars.get('results')}",
                 f"Pool: leaky {pool(l_pool)} ({errors_seen} bootstrap errors printed); "
                 f"fixed {pool(f_pool)}: {fixed.scalars.get('pool_results')}"],
        claim_notes=notes,
        text_panel=[f"leaky: children exit {lcodes}; {pool(l_pool)} "
                    f"({errors_seen} bootstrap errors)",
                    line or "(no bootstrapping error seen on stderr)",
                    f"fixed: children exit {fcodes}; {pool(f_pool)}: "
                    f"{fixed.scalars.get('pool_results')}"],
    )


# --------------------------------------------------------------------------- table

# --------------------------------------------------------------------------- LL106


def eval_ll106(leaky, fixed, device):
    metric = "saved activations / graph nodes reachable from the module"
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad
    ls = series(leaky, "saved_bytes", "forward_only")
    fs = series(fixed, "saved_bytes", "forward_only")
    ln = series(leaky, "graph_nodes", "train")
    fn = series(fixed, "graph_nodes", "train")
    lt = series(leaky, "saved_bytes", "train")
    per_batch = (last(ls) - ls[0]) / max(1, len(ls) - 1) if ls else 0.0
    ok = per_batch > 0 and max(fs, default=1) == 0 and last(ln) > ln[0] > 0 and max(fn, default=1) == 0
    return Outcome(
        verdict(ok), metric,
        f"+{per_batch / 1024:.0f} KiB/batch saved, {last(ln, 0)} nodes",
        f"{max(fs, default=0)} bytes, {max(fn, default=0)} nodes",
        "leaky: saved activations grow every batch without backward(), graph nodes grow with it; fixed: none",
        numbers={"saved_bytes_per_batch_leaky": per_batch, "saved_bytes_fixed": max(fs, default=0),
                 "graph_nodes_leaky": last(ln, 0), "graph_nodes_fixed": max(fn, default=0),
                 "saved_bytes_after_backward_leaky": max(lt, default=0)},
        details=[f"passes without backward(): saved activations reachable from the module grew "
                 f"{per_batch / 1024:.0f} KiB per batch ({ls[0] / 1048576:.2f} -> {last(ls) / 1048576:.2f} MiB); fixed 0",
                 f"training with backward(): graph nodes reachable from the module {ln[0]} -> {last(ln, 0)}, "
                 f"fixed 0; saved bytes after backward() {max(lt, default=0)} (backward frees them)"],
        claim_notes=["After backward() the graphs' saved buffers are freed (0 bytes measured); what stays "
                     "reachable is the stored tensors and the graph nodes. The activation growth is in passes "
                     "that never call backward()."],
        panels=[Panel("saved activations, no backward()", "saved_bytes", "bytes", phase="forward_only"),
                Panel("graph nodes held, training", "graph_nodes", "nodes", phase="train")])


# --------------------------------------------------------------------------- LL203


def eval_ll203(leaky, fixed, device):
    metric = "largest parameter difference between two gloo ranks"
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad
    ld = leaky.scalars.get("max_abs_param_difference", 0.0)
    fd = fixed.scalars.get("max_abs_param_difference", 1.0)
    ok = ld > 1e-3 and fd == 0.0 and fixed.scalars.get("identical") is True
    return Outcome(
        verdict(ok), metric, f"{ld:.3g} (diverged)", f"{fd:.3g} (identical)",
        "leaky > 1e-3 after the run; fixed bit-identical",
        numbers={"param_difference_leaky": ld, "param_difference_fixed": fd,
                 "steps": leaky.scalars.get("steps")},
        details=[f"{leaky.scalars.get('world_size')} ranks, {leaky.scalars.get('steps')} steps from identical "
                 f"parameters: leaky differ by up to {ld:.3g}, fixed identical"],
        bars=[("max |param difference|", ld, fd, "")])


# --------------------------------------------------------------------------- LL405


def eval_ll405(leaky, fixed, device):
    metric = "samples each rank processes per epoch"
    bad = precheck(leaky, fixed, metric)
    if bad:
        return bad
    n = leaky.scalars.get("dataset_size", 0)
    world = leaky.scalars.get("world_size", 0)
    ls, fs = series(leaky, "samples_seen", "ranks"), series(fixed, "samples_seen", "ranks")
    ok = (world >= 2 and ls == [n] * world and sum(fs) == n and fixed.scalars.get("unique_samples_all_ranks") == n
          and max(fs, default=n) <= -(-n // world))
    return Outcome(
        verdict(ok), metric, " / ".join(map(str, ls)), " / ".join(map(str, fs)),
        "leaky: every rank processes the whole dataset; fixed: the ranks split it, together one pass",
        numbers={"samples_per_rank_leaky": ls, "samples_per_rank_fixed": fs, "dataset_size": n,
                 "passes_per_epoch_leaky": leaky.scalars.get("passes_per_epoch"),
                 "passes_per_epoch_fixed": fixed.scalars.get("passes_per_epoch")},
        details=[f"{world} ranks, dataset of {n}: leaky {ls} samples per rank "
                 f"({leaky.scalars.get('passes_per_epoch')} passes per epoch), fixed {fs} "
                 f"({fixed.scalars.get('passes_per_epoch')} pass)"],
        bars=[("samples per rank", max(ls, default=0), max(fs, default=0), "samples")])


RULES = [
    Rule("LL101", "missing-no-grad",
         "activations of every forward pass are kept for a backward pass that never comes, "
         "raising peak memory; and any output kept beyond the iteration keeps its whole graph",
         eval_ll101),
    Rule("LL102", "accumulated-autograd-history",
         "each iteration's computation graph (every saved activation) stays reachable through "
         "the accumulator, so memory grows every iteration until the accumulator dies",
         eval_ll102),
    Rule("LL103", "loop-carried-graph",
         "each iteration's graph is chained to every earlier one: in a training loop the "
         "second backward() fails (in Python with retain_graph=True too, once step() has "
         "run; in LibTorch retain_graph=true lets it run and grow); where no step() runs "
         "between backward() calls, memory and backward time grow every iteration",
         eval_ll103),
    Rule("LL104", "grad-mode-not-called",
         "crashes on entry (the class is not a context manager instance)", eval_ll104),
    Rule("LL105", "hook-registered-per-iteration",
         "every iteration adds one more hook that is never removed: each forward runs all "
         "hooks registered so far, and their closures keep what they captured alive",
         eval_ll105),
    Rule("LL106", "activation-captured-in-module-state",
         "each batch's graph stays reachable from the model through the stored tensor", eval_ll106),
    Rule("LL201", "zero-grad-missing",
         "gradients from every earlier iteration are summed into .grad, so each step() "
         "applies a growing sum; gradient buffers are fixed-size, memory does not grow",
         eval_ll201),
    Rule("LL202", "zero-grad-before-step",
         "step() applies zero (or None) gradients and the model never learns", eval_ll202),
    Rule("LL203", "gradients-not-synchronized",
         "each rank applies its own gradients and the replicas diverge", eval_ll203),
    Rule("LL205", "eval-mode-not-restored",
         "training continues in eval mode after validation: dropout is off and batch-norm "
         "uses and no longer updates its running statistics", eval_ll205),
    Rule("LL206", "gradient-accumulation-unscaled",
         "gradients accumulated over N micro-batches from a loss not divided by N: each SGD "
         "update is N times the update of one batch of the same samples", eval_ll206),
    Rule("LL301", "model-switch-without-release",
         "the old model stays resident until the new one is fully built (peak = old + new), "
         "and its freed blocks stay in PyTorch's cache", eval_ll301,
         cpu_partial="the cache half (freed blocks stay reserved by PyTorch's CUDA caching "
                     "allocator) needs CUDA; the peak half (old + new model) is measured on "
                     "the CPU"),
    Rule("LL302", "empty-cache-before-release",
         "empty_cache() only returns unused cached blocks; live tensors are not freed, so the "
         "call releases nothing of the model", eval_ll302, gpu_only=True,
         gpu_reason="torch.cuda.empty_cache() acts on the CUDA caching allocator; a CPU "
                    "run has no cache to measure"),
    Rule("LL303", "empty-cache-in-hot-loop",
         "forces the allocator to give memory back and re-request it every iteration, which "
         "costs time and does not lower peak memory", eval_ll303, gpu_only=True,
         gpu_reason="on the CPU torch.cuda.empty_cache() is a no-op, so neither the time "
                    "cost nor the peak can be measured"),
    Rule("LL304", "oom-retry-in-except",
         "while the except clause runs, the exception's traceback keeps every frame of the "
         "failed attempt — and its tensors — alive, so the retry competes with the memory "
         "that failed", eval_ll304),
    Rule("LL401", "dataloader-invalid-worker-options",
         "PyTorch raises ValueError at construction", eval_ll401),
    Rule("LL402", "dataloader-worker-memory",
         "workers x prefetch batches (pinned or not) of host memory, not GPU memory",
         eval_ll402,
         cpu_partial="pin_memory=True has no effect without CUDA: that GPU memory stays "
                     "unchanged is measured only in a CUDA run, and the pinned copies are "
                     "not measured separately"),
    Rule("LL403", "dataloader-copy-on-access",
         "reading Python objects in forked workers touches their reference counts, which "
         "copies the pages: each worker ends up with its own copy", eval_ll403),
    Rule("LL404", "cuda-in-dataloader-worker",
         "with fork: 'Cannot re-initialize CUDA in forked subprocess'; with spawn: every "
         "worker creates its own CUDA context", eval_ll404, gpu_only=True,
         gpu_reason="needs CUDA: a CPU-only torch cannot initialise CUDA in the worker, so "
                    "neither the fork error nor a per-worker context can occur",
         timeout_s=300),
    Rule("LL405", "distributed-without-sampler",
         "every rank iterates the whole dataset", eval_ll405),
    Rule("LL501", "fork-with-cuda",
         "the child inherits a CUDA state it cannot use ('Cannot re-initialize CUDA in forked "
         "subprocess')", eval_ll501, gpu_only=True,
         gpu_reason="needs CUDA: without an initialised CUDA state in the parent a forked "
                    "child has nothing to inherit", timeout_s=300),
    Rule("LL502", "spawn-without-main-guard",
         "each child re-imports the main module and starts processes again: Python raises "
         "'An attempt has been made to start a new process before the current process has "
         "finished its bootstrapping phase'", eval_ll502),
]

BY_ID = {rule.id: rule for rule in RULES}


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
