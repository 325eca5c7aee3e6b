"""The process tree under a pid, for tests that watch leaklint's processes: leaklint analyses
in a child process of its own (cli/crash_guard.hpp), which starts leaklint-cpp in turn."""

import os


def descendants(pid):
    parent = {}
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                with open("/proc/%s/stat" % e) as fh:
                    parent[int(e)] = int(fh.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                pass
    out, frontier = [], {pid}
    while frontier:
        kids = [p for p, pp in parent.items() if pp in frontier]
        out.extend(kids)
        frontier = set(kids)
    return out
