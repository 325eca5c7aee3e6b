"""Synthetic scenario results, shaped like what each scenario writes (no torch needed).

``doc(rule_id, variant, device)`` returns the JSON document a scenario would write for a
run that shows the rule's effect (leaky) and its absence (fixed), with the numbers of a
typical run. ``test_harness.py`` uses them to prove that every verdict, on the CPU and
with CUDA, is CONFIRMED by such results and fails when leaky and fixed are swapped, and
``gpu.sh``'s self-test feeds them to the harness through a fake interpreter.
"""

ITERS = {"LL105": 100, "LL106": 40, "LL203": 50, "LL405": 1, "LL205": 40, "LL206": 20, "LL101": 16, "LL102": 40, "LL103": 24, "LL104": 8, "LL201": 60, "LL202": 40,
         "LL301": 4, "LL302": 3, "LL303": 40, "LL304": 6, "LL401": 2, "LL402": 20,
         "LL403": 100, "LL404": 20, "LL501": 2, "LL502": 2}

CUDA_ERR = "Cannot re-initialize CUDA in forked subprocess"
BOOT = ("RuntimeError: An attempt has been made to start a new process before the\n"
        "        current process has finished its bootstrapping phase.")


def _err(kind, message, code="", line=10, variant="leaky"):
    return {"type": kind, "message": message,
            "where": {"file": f"{variant}.py", "line": line, "code": code}}


def _ll101(leaky, n, cuda):
    if leaky:
        return ({"main": {"step": list(range(n)), "saved_mib": [5.14] * n,
                          "saved_peak_mib": [5.14] + [10.27] * (n - 1)},
                 "kept": {"step": list(range(n)), "saved_mib": [5.16 * (i + 1) for i in range(n)]}},
                {"saved_peak_mib": 10.27, "peak_above_start_mib": 17.1,
                 "kept_peak_above_start_mib": 84.2, "kept_saved_peak_mib": 82.5,
                 "kept_outputs_mib": 0.31}, {})
    return ({"main": {"step": list(range(n)), "saved_mib": [0.0] * n, "saved_peak_mib": [0.0] * n},
             "kept": {"step": list(range(n)), "saved_mib": [0.0] * n}},
            {"saved_peak_mib": 0.0, "peak_above_start_mib": 7.5 if not cuda else 1.0,
             "kept_peak_above_start_mib": 1.7, "kept_saved_peak_mib": 0.0,
             "kept_outputs_mib": 0.31}, {})


def _ll102(leaky, n, cuda):
    steps = list(range(n))
    if leaky:
        train = {"step": steps, "graph_nodes": [11 * (i + 1) for i in steps],
                 "heap_mib": [50 + 0.0076 * i for i in steps],
                 "rss_mib": [300 + 0.03 * i for i in steps], "saved_mib": [0.0] * n}
        monitor = {"step": steps[:16], "saved_mib": [1.13 * (i + 1) for i in range(16)]}
    else:
        train = {"step": steps, "graph_nodes": [0] * n, "heap_mib": [50.0] * n,
                 "rss_mib": [300.0] * n, "saved_mib": [0.0] * n}
        monitor = {"step": steps[:16], "saved_mib": [0.0] * 16}
    return {"train": train, "monitor": monitor}, {}, {}


def _ll103(leaky, n, cuda):
    acc_steps = list(range(n))
    if leaky:
        series = {"step_each_chunk": {"step": [0], "saved_mib": [0.1]},
                  "step_each_chunk_retain_graph": {"step": [0], "saved_mib": [0.2]},
                  "accumulate": {"step": acc_steps,
                                 "saved_mib": [0.227 * (i + 1) for i in acc_steps],
                                 "backward_ms": [14.0 + 13.0 * i for i in acc_steps]}}
        errors = {"step_each_chunk": _err("RuntimeError", "Trying to backward through the "
                                          "graph a second time", "loss.backward()"),
                  "step_each_chunk_retain_graph": _err(
                      "RuntimeError", "one of the variables needed for gradient computation "
                      "has been modified by an inplace operation", "loss.backward()")}
        return series, {}, errors
    series = {"step_each_chunk": {"step": [0, 1, 2, 3], "saved_mib": [0.0] * 4},
              "accumulate": {"step": acc_steps, "saved_mib": [0.0] * n,
                             "backward_ms": [14.0] * n}}
    return series, {}, {}


def _ll104(leaky, n, cuda):
    if leaky:
        return {}, {"batches_evaluated": 0}, {"evaluate": _err(
            "TypeError", "'type' object does not support the context manager protocol",
            "with torch.no_grad:")}
    return {}, {"batches_evaluated": n}, {}


def _ll201(leaky, n, cuda):
    steps = list(range(n))
    if leaky:
        return ({"main": {"step": steps, "batches_in_grad": [i + 1 for i in steps],
                          "loss": [1.0 + 0.07 * i for i in steps], "grad_bytes": [4612] * n,
                          "heap_mib": [40.0] * n, "applied_over_fresh": [3.5] * n,
                          "grads_at_forward_bytes": [4612] * n}},
                {"initial_loss": 1.0}, {})
    return ({"main": {"step": steps, "batches_in_grad": [1] * n,
                      "loss": [1.0 / (i + 1) for i in steps], "grad_bytes": [4612] * n,
                      "heap_mib": [40.0] * n, "applied_over_fresh": [1.0] * n,
                      "grads_at_forward_bytes": [0] * n}},
            {"initial_loss": 1.0}, {})


def _ll202(leaky, n, cuda):
    steps = list(range(n))
    if leaky:
        return ({"main": {"step": steps, "param_change": [0.0] * n, "loss": [6.4] * n}},
                {"initial_loss": 6.4}, {})
    return ({"main": {"step": steps, "param_change": [0.2] * n,
                      "loss": [6.4 / (i + 1) for i in steps]}},
            {"initial_loss": 6.4}, {})


def _ll105(leaky, n, cuda):
    steps = list(range(n))
    if leaky:
        return ({"main": {"step": steps, "hooks": [i + 1 for i in steps],
                          "hook_calls_per_forward": [i + 1 for i in steps],
                          "hook_retained_bytes": [16384 * (i + 1) for i in steps]}}, {}, {})
    return ({"main": {"step": steps, "hooks": [0] * n, "hook_calls_per_forward": [1] * n,
                      "hook_retained_bytes": [0] * n}}, {}, {})


def _ll205(leaky, n, cuda):
    epochs = [i // 10 for i in range(n)]
    later = [0.0 if leaky else 0.5] * (n - 10)
    return ({"main": {"step": list(range(n)), "epoch": epochs,
                      "training_flag": [1] * 10 + [0 if leaky else 1] * (n - 10),
                      "dropout_dropped_fraction": [0.51] * 10 + later,
                      "bn_running_mean_change": [0.09] * 10 + [0.0 if leaky else 0.08] * (n - 10)}},
            {}, {})


def _ll206(leaky, n, cuda):
    ref = [0.29 * 0.97 ** i for i in range(n)]
    return ({"sgd": {"step": list(range(n)), "big_batch_update_norm": ref,
                     "update_norm": [r * (8.0 if leaky else 1.0) for r in ref]},
             "adam": {"step": list(range(n)), "update_norm": [0.004] * n,
                      "big_batch_update_norm": [float("nan")] * n}}, {}, {})


def _ll106(leaky, n, cuda):
    steps = list(range(n))
    grow = [147456 * (i + 1) for i in steps] if leaky else [0] * n
    nodes = [10 * (i + 1) for i in steps] if leaky else [0] * n
    return ({"forward_only": {"step": steps, "saved_bytes": grow, "graph_nodes": nodes},
             "train": {"step": steps, "saved_bytes": [0] * n, "graph_nodes": nodes}}, {}, {})


def _ll203(leaky, n, cuda):
    return ({}, {"world_size": 2, "steps": n, "max_abs_param_difference": 0.124 if leaky else 0.0,
                 "identical": not leaky}, {})


def _ll405(leaky, n, cuda):
    per_rank = [256, 256] if leaky else [128, 128]
    return ({"ranks": {"rank": [0, 1], "samples_seen": per_rank, "unique_seen": per_rank,
                       "steps": [x // 16 for x in per_rank]}},
            {"dataset_size": 256, "world_size": 2, "samples_processed_all_ranks": sum(per_rank),
             "unique_samples_all_ranks": 256, "passes_per_epoch": 2.0 if leaky else 1.0}, {})


def _ll301(leaky, n, cuda):
    model = 64.0
    peaks = [model * (2.14 if leaky else 1.15)] * n
    scalars = {"model_mib": model}
    if cuda:
        scalars["reserved_minus_allocated_mib"] = model if leaky else 0.0
    return {"main": {"step": list(range(n)), "peak_during_build_mib": peaks}}, scalars, {}


def _ll302(leaky, n, cuda):
    model = 128.0
    reserved = [model + 2.0 if leaky else 2.0] * n
    return ({"main": {"step": list(range(n)), "reserved_after_release_mib": reserved,
                      "allocated_after_release_mib": [2.0] * n,
                      "reserved_with_model_mib": [model + 2.0] * n}},
            {"model_mib": model}, {})


def _ll303(leaky, n, cuda):
    steps = list(range(n))
    if leaky:
        return ({"main": {"step": steps, "iter_ms": [2.6] * n, "segments_freed": [4 * i for i in steps],
                          "reserved_mib": [0.0 if i % 2 else 40.0 for i in steps]}},
                {"max_reserved_mib": 42.0, "max_allocated_mib": 30.0, "alloc_retries": 0}, {})
    return ({"main": {"step": steps, "iter_ms": [1.9] * n, "segments_freed": [0] * n,
                      "reserved_mib": [42.0] * n}},
            {"max_reserved_mib": 42.0, "max_allocated_mib": 30.0, "alloc_retries": 0}, {})


def _ll304(leaky, n, cuda):
    done = n
    series = {"main": {"step": [0, 1, 2], "heap_mib": [60.0, 60.0, 60.0]},
              "retry": {"step": [3], "saved_mib": [40.1 if leaky else 0.0],
                        "heap_mib": [101.0 if leaky else 61.0]}}
    return series, {"step_peak_mib": 50.0, "budget_mib": 75.0, "steps_done": done}, {}


def _ll401(leaky, n, cuda):
    if leaky:
        return {}, {}, {"construct_and_iterate": _err(
            "ValueError", "persistent_workers option needs num_workers > 0",
            "train_loader = DataLoader(dataset, persistent_workers=True)")}
    return {"main": {"step": list(range(n)), "workers": [2] * n}}, {}, {}


def _ll402(leaky, n, cuda):
    steps = list(range(n))
    workers = 10 if leaky else 2
    host = 180.0 if leaky else 32.0
    scalars = {"num_workers": workers, "prefetch_factor": 4 if leaky else 2,
               "inflight_mib": 160.0 if leaky else 16.0, "batch_mib": 4.0}
    if cuda:
        scalars["cuda_allocated_mib"] = 20.0
    return ({"main": {"step": steps, "host_mib": [host] * n, "shmem_mib": [host * 0.4] * n,
                      "workers_private_dirty_mib": [9.6 * workers] * n}}, scalars, {})


def _ll403(leaky, n, cuda):
    samples = 10
    ws = [17.2, 54.0] + [56.2] * (samples - 2) if leaky else [8.5] * 4 + [28.9] * (samples - 4)
    return ({"main": {"step": [10 * i for i in range(samples)], "workers": [2] * samples,
                      "worker_private_dirty_mib": ws}},
            {"samples": 100000, "index_mib": 33.7 if leaky else 5.0}, {})


def _ll404(leaky, n, cuda):
    steps = list(range(n))
    spawn = {"step": steps, "workers": [2] * n,
             "device_memory_outside_allocator_mib": [1000.0 if leaky else 0.0] * n}
    if leaky:
        return ({"spawn": spawn}, {}, {"fork": _err(
            "RuntimeError", "Caught RuntimeError in DataLoader worker process 0.\n"
            f"RuntimeError: {CUDA_ERR}. To use CUDA with multiprocessing, you must use the "
            "'spawn' start method", "for step, (x, y) in enumerate(train_loader):")})
    return {"fork": {"step": steps, "workers": [2] * n}, "spawn": spawn}, {}, {}


def _ll501(leaky, n, cuda):
    if leaky:
        return ({}, {"exitcodes": [1] * n, "results": [], "start_method": "fork"}, {},
                f"Traceback (most recent call last):\nRuntimeError: {CUDA_ERR}. To use CUDA "
                "with multiprocessing, you must use the 'spawn' start method\n")
    return {}, {"exitcodes": [0] * n, "results": [[i, i] for i in range(n)],
                "start_method": "spawn"}, {}


def _ll502(leaky, n, cuda):
    if leaky:
        return ({}, {"exitcodes": [1] * n, "results": [], "pool_done": False},
                {}, (BOOT + "\n") * 3)
    return {}, {"exitcodes": [0] * n, "results": [[i, i] for i in range(n)],
                "pool_done": True, "pool_results": [0, 1]}, {}


BUILDERS = {"LL101": _ll101, "LL102": _ll102, "LL103": _ll103, "LL104": _ll104, "LL105": _ll105, "LL106": _ll106,
            "LL203": _ll203, "LL405": _ll405,
            "LL201": _ll201, "LL202": _ll202, "LL205": _ll205, "LL206": _ll206, "LL301": _ll301, "LL302": _ll302,
            "LL303": _ll303, "LL304": _ll304, "LL401": _ll401, "LL402": _ll402,
            "LL403": _ll403, "LL404": _ll404, "LL501": _ll501, "LL502": _ll502}


def doc(rule_id, variant, device="cpu"):
    """(JSON document, stderr text) of a synthetic run."""
    n = ITERS[rule_id]
    built = BUILDERS[rule_id](variant == "leaky", n, device == "cuda")
    series, scalars, errors = built[:3]
    stderr = built[3] if len(built) > 3 else ""
    if series and not any(isinstance(v, dict) for v in series.values()):
        series = {"main": series}
    return ({"rule": rule_id, "variant": variant, "device": device, "iters": n,
             "env": {"torch": "synthetic", "python": "3", "cpu": "synthetic", "cores": 1,
                     "cuda_device": "synthetic GPU" if device == "cuda" else None},
             "series": series, "scalars": scalars, "errors": errors, "error": None,
             "skipped": None, "notes": [], "wall_s": 1.0, "peak_rss_mib": 100.0}, stderr)
