#!/usr/bin/env python3
"""Writes each rule doc's "Measured effect" section from docs/verification/measured.json
(and docs/verification/cuda/measured.json, once a GPU run has been committed).

usage: fill_docs.py [REPO_ROOT]   (idempotent: replaces the section's body)

``check_report.py`` fails when a rule doc's section differs from what this writes, so a
rule doc quotes only the figures of the committed measurement.
"""
import json
import pathlib
import re
import sys


def _where(measured):
    env = measured["env"]
    if measured.get("device") == "cuda":
        dev = f"CUDA ({env.get('cuda_device', '?')})"
    else:
        dev = f"CPU ({env.get('cpu', '?')}, {env.get('cores', '?')} cores)"
    torch_v = env.get("debian_python3_torch") or env.get("torch")
    return f"{dev}, torch {torch_v}, Python {env.get('python')}, {env.get('date')}"


def _row_lines(row, where, device):
    rid = row["rule"]
    lang = "Python" if row["lang"] == "python" else "C++"
    verdict = row["verdict"]
    part = " (CPU part)" if row.get("cpu_partial") else ""
    files = (f"`tests/verify/{rid}/` (`{row['leaky_path'].rsplit('/', 1)[-1]}` / "
             f"`{row['fixed_path'].rsplit('/', 1)[-1]}`)")
    if verdict == "GPU-ONLY":
        return [f"{lang}: **GPU-ONLY** — not measured: the committed run of {files} had no "
                f"GPU ({where}).", "",
                "The effect exists only on a CUDA device; the CPU suite checks that leaklint "
                "flags the leaky scenario and not the fixed one, and `tests/verify/gpu.sh` "
                "measures it on a machine with a GPU."]
    if verdict == "NOT RUN" or "metric" not in row:
        return [f"{lang}: **NOT RUN** — {files}: {row.get('skipped', 'not measured')}."]
    lines = [f"{lang}: **{verdict}**{part} — measured by {files} on {where}."]
    lines += ["", f"- {row['metric']}: leaky **{row['leaky']}**, fixed **{row['fixed']}**."]
    lines += [f"- {d}" for d in row.get("details", [])[:5]]
    if row.get("cpu_partial"):
        lines.append(f"- CPU part only: {row['cpu_partial']}.")
    lines += [f"- Note: {c}" for c in row.get("claim_notes") or []]
    return lines


def sections(root):
    """{doc file name: section body} for every rule doc with a measured row."""
    root = pathlib.Path(root)
    measured = json.loads((root / "docs/verification/measured.json").read_text())
    runs = [(measured, "")]
    cuda_path = root / "docs/verification/cuda/measured.json"
    if cuda_path.exists():
        runs.append((json.loads(cuda_path.read_text()), "cuda/"))
    out = {}
    # rows a published GPU run measured: their CPU run's GPU-ONLY note is not repeated
    on_gpu = {(row["rule"], row["lang"]) for run, sub in runs if sub
              for row in run.get("rows", {}).values() if row["verdict"] != "NOT RUN"}
    for doc in sorted((root / "docs/rules").glob("LL*.md")):
        rid = doc.name[:5]
        lines = []
        for run, sub in runs:
            where = _where(run)
            for row in run.get("rows", {}).values():
                if row["rule"] != rid:
                    continue
                if sub and row["verdict"] in ("NOT RUN",):
                    continue
                if not sub and row["verdict"] == "GPU-ONLY" and (rid, row["lang"]) in on_gpu:
                    continue
                if lines:
                    lines.append("")
                lines += _row_lines(row, where, run.get("device"))
        if not lines:
            continue
        lines += ["", "Plots and the full table: [docs/verification](../verification/README.md)"
                  + (" and [docs/verification/cuda](../verification/cuda/README.md)"
                     if len(runs) > 1 else "") + "."]
        out[doc.name] = "\n".join(lines) + "\n"
    return out


def replace_section(text, body):
    return re.sub(r"(## Measured effect\n)(.*?)(?=\n## |\Z)", lambda m: m.group(1) + body,
                  text, flags=re.S)


def main(argv):
    root = pathlib.Path(argv[1] if len(argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
    for name, body in sections(root).items():
        doc = root / "docs/rules" / name
        text = doc.read_text()
        new = replace_section(text, body)
        if new != text:
            doc.write_text(new)
            print("updated", name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
