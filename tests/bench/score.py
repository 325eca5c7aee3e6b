#!/usr/bin/env python3
"""Score leaklint's SARIF findings on a labelled directory against its expected.json.

usage: score.py LEAKLINT_BIN DIR [--min-precision P --min-recall R] [-- extra leaklint args]
Prints per-rule TP/FP/FN and, last, one line: precision, recall, F1.
Exit 0 when both minima hold (defaults 0), 1 otherwise, 2 when leaklint gave no SARIF.
"""
import collections, json, os, pathlib, subprocess, sys, urllib.parse

args = sys.argv[1:]
extra = []
if "--" in args:
    i = args.index("--"); extra = args[i + 1:]; args = args[:i]
opts = {"--min-precision": 0.0, "--min-recall": 0.0}
pos = []
while args:
    a = args.pop(0)
    if a in opts: opts[a] = float(args.pop(0))
    else: pos.append(a)
binary, d = pos[0], pathlib.Path(pos[1]).resolve()
exp = json.loads((d / "expected.json").read_text())
proc = subprocess.run([binary, "--format", "sarif", *extra, "."], cwd=d, capture_output=True, text=True, timeout=600)
try:
    sarif = json.loads(proc.stdout)
except json.JSONDecodeError:
    print(proc.stderr[-2000:]); print(f"no SARIF on stdout (exit {proc.returncode})"); sys.exit(2)

def norm(uri, base=None):
    uri = urllib.parse.unquote(uri)
    if uri.startswith("file://"): uri = uri[7:]
    p = pathlib.Path(uri)
    if not p.is_absolute() and base:  # relative to %SRCROOT% (the repository's root)
        p = pathlib.Path(base) / p
    if p.is_absolute():
        try: p = p.resolve().relative_to(d)
        except ValueError: pass
    return str(p).lstrip("./") if str(p).startswith("./") else str(p)

found = []
for run in sarif.get("runs", []):
    srcroot = run.get("originalUriBaseIds", {}).get("%SRCROOT%", {}).get("uri")
    srcroot = urllib.parse.unquote(srcroot[7:]) if srcroot and srcroot.startswith("file://") else None
    for r in run.get("results", []):
        if r.get("suppressions"): continue
        loc = r["locations"][0]["physicalLocation"]
        found.append((r.get("ruleId"), norm(loc["artifactLocation"]["uri"], srcroot if loc["artifactLocation"].get("uriBaseId") == "%SRCROOT%" else None), loc["region"]["startLine"]))
tp = collections.Counter(); fn = collections.Counter(); fp = collections.Counter()
matched = set()
opt = [e for e in exp if e.get("optional")]
exp = [e for e in exp if not e.get("optional")]
for e in opt:
    matched.update(f for f in found if f[0] == e["rule"] and f[1] == e["file"] and f[2] in e["lines"])
for e in exp:
    hit = [f for f in found if f[0] == e["rule"] and f[1] == e["file"] and f[2] in e["lines"]]
    if hit: tp[e["rule"]] += 1; matched.update(hit)
    else: fn[e["rule"]] += 1; print(f"MISS {e['rule']} {e['file']}:{e['lines'][0]}")
for f in found:
    if f not in matched: fp[f[0]] += 1; print(f"FALSE {f[0]} {f[1]}:{f[2]}")
rules = sorted(set(tp) | set(fn) | set(fp))
for r in rules: print(f"{r}: tp={tp[r]} fp={fp[r]} fn={fn[r]}")
T, P, N = sum(tp.values()), sum(fp.values()), sum(fn.values())
prec = T / (T + P) if T + P else 0.0
rec = T / (T + N) if T + N else 0.0
f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
ok = prec >= opts["--min-precision"] and rec >= opts["--min-recall"]
print(f"precision={prec:.3f} recall={rec:.3f} f1={f1:.3f} (tp={T} fp={P} fn={N})")
sys.exit(0 if ok else 1)
