"""Measurement helpers shared by the leak verification scenarios.

Every scenario program (``tests/verify/<ID>/leaky.py`` / ``fixed.py``) keeps the
pattern that leaklint is meant to flag in its own file and uses this module only to
*observe* what the pattern does to memory, gradients and time:

* ``SavedTensorMeter`` counts the bytes of tensors that autograd keeps alive for a
  backward pass (installed with ``torch.autograd.graph.saved_tensors_hooks``; every
  saved storage is counted once while at least one graph still references it).
* ``Mem`` reads device memory: CUDA allocator counters on a GPU, process RSS and the
  high-water mark (``/proc/self/status`` VmRSS/VmHWM, reset through
  ``/proc/self/clear_refs``) on the CPU; ``heap_live_bytes`` reads glibc's count of
  live malloc memory (``mallinfo2``), which heap fragmentation does not inflate.
* ``host_memory`` / ``smaps_rollup`` / ``child_pids`` read the memory of DataLoader
  workers and of the batches they hand over in shared memory.
* ``GradProbe`` / ``ParamProbe`` observe what an optimizer step really applies.
* ``Run.memory_budget`` makes allocations beyond a budget fail (RLIMIT_AS on the CPU,
  ``set_per_process_memory_fraction`` on CUDA) to provoke a real out-of-memory error.

``main()`` gives every scenario the same command line
(``--device {auto,cpu,cuda} --iters N --json OUT``) and writes the measurements as one
JSON document that ``harness.py`` evaluates.

glibc note: on import this module fixes glibc's mmap threshold at 128 KiB (glibc's own
initial value) so that a freed tensor of 128 KiB or more is returned to the kernel at
once. Without it glibc raises the threshold dynamically and keeps freed blocks on its
free lists, and RSS would report memory that is no longer held by any tensor.
"""

import argparse
import ctypes
import gc
import json
import math
import os
import platform
import resource
import sys
import time
import traceback

MiB = 1 << 20
KiB = 1 << 10

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 128 * KiB


def _tune_malloc():
    try:
        libc = ctypes.CDLL("libc.so.6")
        ok = libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        libc.mallopt(_M_TRIM_THRESHOLD, MMAP_THRESHOLD)
        return bool(ok)
    except (OSError, AttributeError):
        return False


MALLOC_TUNED = _tune_malloc()


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
        "uordblks", "fordblks", "keepcost")]


def _load_mallinfo2():
    try:
        fn = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):
        return None
    fn.restype = _MallInfo2
    return fn


_MALLINFO2 = _load_mallinfo2()


def heap_live_bytes():
    """Bytes handed out by malloc and not yet freed (glibc mallinfo2, all arenas).

    Unlike RSS this is not inflated by heap fragmentation or glibc's free lists, so
    it shows what live objects (tensors, autograd nodes, Python objects) really hold.
    Returns None where mallinfo2 is unavailable (glibc < 2.33).
    """
    if _MALLINFO2 is None:
        return None
    info = _MALLINFO2()
    return info.uordblks + info.hblkhd

import torch  # noqa: E402  (imported after mallopt on purpose)


# --------------------------------------------------------------------------- /proc


def proc_status(pid="self"):
    """VmRSS, VmHWM, VmSize ... of a process, in bytes."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("Vm") or line.startswith("Rss"):
                    key, _, rest = line.partition(":")
                    parts = rest.split()
                    if len(parts) == 2 and parts[1] == "kB":
                        out[key] = int(parts[0]) * KiB
    except OSError:
        pass
    return out


def rss_bytes(pid="self"):
    return proc_status(pid).get("VmRSS", 0)


def hwm_bytes(pid="self"):
    return proc_status(pid).get("VmHWM", 0)


def reset_peak_rss():
    """Reset VmHWM of this process to its current RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def maxrss_bytes():
    """Lifetime peak RSS from getrusage (never reset)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * KiB


def smaps_rollup(pid="self"):
    """/proc/<pid>/smaps_rollup as {field: bytes}; {} if the process is gone."""
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) == 3 and parts[2] == "kB":
                    out[parts[0].rstrip(":")] = int(parts[1]) * KiB
    except OSError:
        pass
    return out


def meminfo():
    out = {}
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 2:
                    out[parts[0].rstrip(":")] = int(parts[1]) * KiB
    except OSError:
        pass
    return out


def child_pids(parent=None):
    """Direct children of ``parent`` (default: this process), found through /proc."""
    parent = os.getpid() if parent is None else parent
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        # the command name may contain spaces: fields after the last ')'
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == parent:
            pids.append(int(name))
    return sorted(pids)


def host_memory(pids, shmem_base=0):
    """Host memory of a process tree: anonymous PSS of ``pids`` plus shared memory.

    DataLoader workers hand batches over in shared memory (/dev/shm); a batch that is
    in a queue is mapped by no process, so the system-wide ``Shmem`` growth since
    ``shmem_base`` (a ``meminfo()["Shmem"]`` reading) is added. PSS splits a page
    shared copy-on-write among its sharers, so the sum over parent and workers counts
    every page once. ``per_pid`` holds each process's Private_Dirty (pages it owns
    alone: for a forked worker, the pages it has copied or allocated).
    """
    pss_anon = private_dirty = 0
    per_pid = {}
    for pid in pids:
        roll = smaps_rollup(pid)
        pss_anon += roll.get("Pss_Anon", roll.get("Private_Dirty", 0))
        per_pid[pid] = roll.get("Private_Dirty", 0)
        private_dirty += per_pid[pid]
    shmem = max(0, meminfo().get("Shmem", 0) - shmem_base)
    return {"pss_anon": pss_anon, "private_dirty": private_dirty, "shmem": shmem,
            "total": pss_anon + shmem, "per_pid": per_pid}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# --------------------------------------------------------------------------- memory


def _storage_key(t):
    """(data_ptr, nbytes) of the storage behind ``t`` (torch 1.13 and 2.x)."""
    if hasattr(t, "untyped_storage"):
        st = t.untyped_storage()
    else:
        st = t.storage()
    return st.data_ptr(), st.nbytes()


class _Held:
    """What autograd stores instead of the saved tensor while the meter is on."""

    __slots__ = ("tensor", "version", "key", "meter")

    def __init__(self, tensor, key, meter):
        self.tensor = tensor
        self.version = tensor._version
        self.key = key
        self.meter = meter

    def __del__(self):
        meter = self.meter
        if meter is not None and self.key is not None:
            meter._release(self.key)


class SavedTensorMeter:
    """Bytes of tensors saved by autograd for a backward pass that are still alive.

    Use as a context manager around forward passes. Each saved storage is counted once
    while any graph node still holds it; the count drops when backward() frees the
    graph's buffers or when the last reference to the graph dies. The hook stores a
    detached alias of the saved tensor, so it adds no reference cycle of its own.

    Autograd skips its "modified by an inplace operation" check for tensors packed by
    saved_tensors_hooks; the meter re-implements that check in its unpack hook (a
    detached alias shares the version counter), so code behaves as it would without
    the meter.
    """

    def __init__(self):
        self._live = {}
        self._ignored = set()
        self.bytes = 0
        self.peak = 0
        self.packed = 0
        self._ctx = None

    def ignore(self, tensors):
        """Do not count these storages (e.g. parameters, which live on anyway)."""
        for t in tensors:
            ptr, _ = _storage_key(t)
            self._ignored.add((ptr, t.device.type, t.device.index))
        return self

    def _pack(self, t):
        ptr, nbytes = _storage_key(t)
        key = (ptr, t.device.type, t.device.index)
        self.packed += 1
        if key in self._ignored:
            return _Held(t.detach(), None, None)
        entry = self._live.get(key)
        if entry is None:
            self._live[key] = [1, nbytes]
            self.bytes += nbytes
            if self.bytes > self.peak:
                self.peak = self.bytes
        else:
            entry[0] += 1
        return _Held(t.detach(), key, self)

    @staticmethod
    def _unpack(held):
        t = held.tensor
        if t._version != held.version:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified "
                f"by an inplace operation: [{t.type()} {list(t.shape)}] is at version "
                f"{t._version}; expected version {held.version} instead. (Raised by "
                "measure.SavedTensorMeter, which repeats the check that autograd skips "
                "for tensors packed by saved_tensors_hooks.)")
        return t

    def _release(self, key):
        entry = self._live.get(key)
        if entry is None:
            return
        entry[0] -= 1
        if entry[0] == 0:
            del self._live[key]
            self.bytes -= entry[1]

    def reset_peak(self):
        self.peak = self.bytes

    def __enter__(self):
        self._ctx = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)
        self._ctx = None
        return False


class Mem:
    """Device memory counters: CUDA allocator on a GPU, RSS/HWM on the CPU (bytes)."""

    def __init__(self, device):
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def now(self):
        if self.cuda:
            return torch.cuda.memory_allocated(self.device)
        return rss_bytes()

    def peak(self):
        if self.cuda:
            return torch.cuda.max_memory_allocated(self.device)
        return hwm_bytes()

    def reserved(self):
        if self.cuda:
            return torch.cuda.memory_reserved(self.device)
        return None

    def reset_peak(self):
        if self.cuda:
            torch.cuda.reset_peak_memory_stats(self.device)
            return True
        return reset_peak_rss()

    def footprint(self):
        """Memory this process holds from the system: CUDA reserved, or RSS."""
        if self.cuda:
            return torch.cuda.memory_reserved(self.device)
        return rss_bytes()

    def peak_footprint(self):
        if self.cuda:
            return torch.cuda.max_memory_reserved(self.device)
        return hwm_bytes()

    def settle(self):
        """Collect garbage and (CUDA) return cached blocks, before a footprint baseline."""
        gc.collect()
        if self.cuda:
            torch.cuda.synchronize(self.device)
            torch.cuda.empty_cache()

    def snapshot(self):
        snap = {"rss": rss_bytes(), "hwm": hwm_bytes()}
        if self.cuda:
            snap.update(
                allocated=torch.cuda.memory_allocated(self.device),
                max_allocated=torch.cuda.max_memory_allocated(self.device),
                reserved=torch.cuda.memory_reserved(self.device),
            )
        return snap

    @property
    def kind(self):
        return "torch.cuda.memory_allocated" if self.cuda else "process RSS"


def allocator_counters(device):
    """The CUDA caching allocator's cumulative counters (torch.cuda.memory_stats):
    ``segments_freed`` / ``segments_allocated`` count cudaFree / cudaMalloc calls,
    ``alloc_retries`` the allocations that had to free cached blocks and retry."""
    stats = torch.cuda.memory_stats(device)
    return {"segments_freed": stats.get("segment.all.freed", 0),
            "segments_allocated": stats.get("segment.all.allocated", 0),
            "alloc_retries": stats.get("num_alloc_retries", 0)}


def tensor_bytes(tensors):
    seen = set()
    total = 0
    for t in tensors:
        if t is None:
            continue
        ptr, nbytes = _storage_key(t)
        if (ptr, t.device) not in seen:
            seen.add((ptr, t.device))
            total += nbytes
    return total


def live_tensor_bytes(device_type=None):
    """Bytes of all tensor storages reachable from Python objects (gc scan)."""
    seen = set()
    total = 0
    for obj in gc.get_objects():
        try:
            if not isinstance(obj, torch.Tensor):
                continue
            if device_type and obj.device.type != device_type:
                continue
            ptr, nbytes = _storage_key(obj)
        except Exception:  # noqa: BLE001 - some tensor subclasses have no storage
            continue
        key = (ptr, str(obj.device))
        if key not in seen:
            seen.add(key)
            total += nbytes
    return total


def python_object_bytes(container):
    """sys.getsizeof of a list/tuple/dict and of the objects one and two levels in."""
    seen = set()
    total = 0
    stack = [(container, 0)]
    while stack:
        obj, depth = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if depth < 2:
            if isinstance(obj, dict):
                stack.extend((v, depth + 1) for kv in obj.items() for v in kv)
            elif isinstance(obj, (list, tuple)):
                stack.extend((v, depth + 1) for v in obj)
    return total


def graph_nodes(tensor):
    """Number of autograd nodes reachable from ``tensor.grad_fn`` (0 without history)."""
    fn = getattr(tensor, "grad_fn", None)
    if fn is None:
        return 0
    # keep every wrapper alive while walking, so that id() values are not reused
    seen = {id(fn): fn}
    stack = [fn]
    while stack:
        node = stack.pop()
        for nxt, _ in getattr(node, "next_functions", ()):
            if nxt is not None and id(nxt) not in seen:
                seen[id(nxt)] = nxt
                stack.append(nxt)
    return len(seen)


# --------------------------------------------------------------------------- training


def _norm(tensors):
    total = 0.0
    for t in tensors:
        if t is not None:
            total += float(t.detach().double().pow(2).sum())
    return math.sqrt(total)


class GradProbe:
    """Separates the gradient of the current batch from what ``.grad`` holds.

    Call ``before()`` right before ``backward()`` and ``after()`` right after it.
    ``after()`` returns a dict: ``fresh`` (norm of this batch's gradient), ``applied``
    (norm of what ``.grad`` now holds, i.e. what step() will apply), ``batches`` (how
    many backward() results ``.grad`` holds: counted up from the last time the
    gradients were None or all zero), ``grad_bytes`` (bytes of all ``.grad`` buffers)
    and ``same_buffers`` (whether the buffers are the ones seen at the first call).
    """

    def __init__(self, params):
        self.params = list(params)
        self._prev = None
        self._ptrs = None
        self._batches = 0

    def grads_alive_bytes(self):
        return tensor_bytes(p.grad for p in self.params)

    def before(self):
        self._prev = [None if p.grad is None else p.grad.detach().clone() for p in self.params]
        if all(g is None or not bool(g.any()) for g in self._prev):
            self._batches = 0

    def after(self):
        fresh = []
        for p, prev in zip(self.params, self._prev):
            if p.grad is None:
                continue
            fresh.append(p.grad if prev is None else p.grad - prev)
        self._batches += 1
        ptrs = [None if p.grad is None else p.grad.data_ptr() for p in self.params]
        same = self._ptrs is None or ptrs == self._ptrs
        if self._ptrs is None:
            self._ptrs = ptrs
        return {"fresh": _norm(fresh), "applied": _norm(p.grad for p in self.params),
                "batches": self._batches, "grad_bytes": self.grads_alive_bytes(),
                "same_buffers": same}


class ParamProbe:
    """Norm of the parameter change since the previous call."""

    def __init__(self, params):
        self.params = list(params)
        self._last = [p.detach().clone() for p in self.params]

    def delta(self):
        d = _norm(p.detach() - last for p, last in zip(self.params, self._last))
        self._last = [p.detach().clone() for p in self.params]
        return d


# --------------------------------------------------------------------------- run


class Skip(Exception):
    """Raised by a scenario that cannot measure anything on this device."""


class Run:
    """State of one scenario run: arguments, device, series, scalars, errors."""

    def __init__(self, args, rule, variant):
        self.args = args
        self.rule = rule
        self.variant = variant
        self.iters = args.iters
        name = args.device
        if name == "auto":
            name = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(name)
        self.cuda = self.device.type == "cuda"
        self.mem = Mem(self.device)
        self.meter = SavedTensorMeter()
        self.series = {}
        self.scalars = {}
        self.errors = {}
        self.notes = []
        self.t0 = time.perf_counter()

    # ---- results
    def record(self, phase="main", **values):
        """Append one value per name to the series of ``phase``."""
        bucket = self.series.setdefault(phase, {})
        for key, value in values.items():
            bucket.setdefault(key, []).append(value)

    def sample(self, step, phase="main", **extra):
        """Record the standard memory sample (MiB) plus ``extra`` values."""
        self.mem.sync()
        values = {"step": step, "saved_mib": self.meter.bytes / MiB,
                  "saved_peak_mib": self.meter.peak / MiB,
                  "rss_mib": rss_bytes() / MiB}
        heap = heap_live_bytes()
        if heap is not None:
            values["heap_mib"] = heap / MiB
        if self.cuda:
            values["allocated_mib"] = torch.cuda.memory_allocated(self.device) / MiB
            values["max_allocated_mib"] = torch.cuda.max_memory_allocated(self.device) / MiB
            values["reserved_mib"] = torch.cuda.memory_reserved(self.device) / MiB
            values.update(allocator_counters(self.device))
        values.update(extra)
        self.record(phase, **values)

    def set(self, **scalars):
        self.scalars.update(scalars)

    def note(self, text):
        self.notes.append(text)

    def require_cuda(self, why):
        if not self.cuda:
            raise Skip(why)

    # ---- phases: an error in one phase is recorded and the run goes on
    def phase(self, name, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Skip:
            raise
        except Exception as exc:  # noqa: BLE001 - the error is the measurement
            self.errors[name] = describe_error(exc)
            return None

    def now_s(self):
        return time.perf_counter() - self.t0

    def memory_budget(self, budget_bytes):
        """Context manager: make allocations beyond ``budget_bytes`` fail.

        CUDA: ``torch.cuda.set_per_process_memory_fraction`` at the reserved memory plus
        the budget (the caching allocator raises ``OutOfMemoryError``). CPU:
        ``RLIMIT_AS`` set to the current address space plus the budget (the CPU
        allocator raises ``RuntimeError: ... can't allocate memory``); run one warm-up
        step first so that threads and malloc arenas already exist.
        """
        return _MemoryBudget(self, int(budget_bytes))


class _MemoryBudget:
    def __init__(self, run, budget):
        self.run = run
        self.budget = budget
        self._old = None

    def __enter__(self):
        run = self.run
        run.mem.settle()
        if run.cuda:
            # the caching allocator checks the limit against reserved memory
            total = torch.cuda.get_device_properties(run.device).total_memory
            used = torch.cuda.memory_reserved(run.device)
            torch.cuda.set_per_process_memory_fraction(min(1.0, (used + self.budget) / total),
                                                       run.device)
        else:
            self._old = resource.getrlimit(resource.RLIMIT_AS)
            limit = proc_status().get("VmSize", 0) + self.budget
            resource.setrlimit(resource.RLIMIT_AS, (limit, self._old[1]))
        return self

    def __exit__(self, *exc):
        run = self.run
        if run.cuda:
            torch.cuda.set_per_process_memory_fraction(1.0, run.device)
        elif self._old is not None:
            resource.setrlimit(resource.RLIMIT_AS, self._old)
        return False


def describe_error(exc):
    tb = traceback.extract_tb(exc.__traceback__)
    where = None
    for frame in reversed(tb):
        if os.path.basename(frame.filename) in ("leaky.py", "fixed.py"):
            where = {"file": os.path.basename(frame.filename), "line": frame.lineno,
                     "code": (frame.line or "").strip()}
            break
    return {"type": type(exc).__name__, "message": str(exc).strip()[:4000], "where": where}


def environment():
    return {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "malloc_mmap_threshold": MMAP_THRESHOLD if MALLOC_TUNED else None,
    }


def parse_args(iters, extra=None, argv=None):
    parser = argparse.ArgumentParser(add_help=True)
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--iters", type=int, default=iters)
    parser.add_argument("--json", default=None, help="write the measurements here")
    parser.add_argument("--seed", type=int, default=0)
    for flag, kwargs in (extra or {}).items():
        parser.add_argument(flag, **kwargs)
    # parse_known_args: spawn children re-run the main module with their own argv
    args, _unknown = parser.parse_known_args(argv)
    return args


def main(scenario, rule, variant, iters, extra_args=None):
    """Run ``scenario(run)`` and write its JSON; the exit status is 0 unless it raised."""
    args = parse_args(iters, extra_args)
    torch.manual_seed(args.seed)
    run = Run(args, rule, variant)
    status = 0
    error = None
    skipped = None
    try:
        scenario(run)
    except Skip as exc:
        skipped = str(exc)
    except Exception as exc:  # noqa: BLE001 - recorded for the harness
        error = describe_error(exc)
        traceback.print_exc()
        status = 1
    doc = {
        "rule": rule,
        "variant": variant,
        "device": str(run.device),
        "iters": run.iters,
        "env": environment(),
        "series": run.series,
        "scalars": run.scalars,
        "errors": run.errors,
        "error": error,
        "skipped": skipped,
        "notes": run.notes,
        "wall_s": round(run.now_s(), 3),
        "peak_rss_mib": maxrss_bytes() / MiB,
    }
    text = json.dumps(doc, indent=1, default=float)
    if args.json:
        with open(args.json, "w") as fh:
            fh.write(text)
    else:
        print(text)
    sys.stdout.flush()
    return status
