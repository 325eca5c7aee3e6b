#!/usr/bin/env python3
"""Writes each rule doc's "Measured effect" section from docs/verification/measured.json.

usage: fill_docs.py [REPO_ROOT]   (idempotent: replaces the section's body)
"""
import json
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
measured = json.loads((root / "docs/verification/measured.json").read_text())
env = measured["env"]
where = f"CPU ({env.get('cpu', '?')}, {env.get('cores', '?')} cores), torch {env.get('debian_python3_torch') or env.get('torch')}, Python {env.get('python')}, {env.get('date')}"
for doc in sorted((root / "docs/rules").glob("LL*.md")):
    rid = doc.name[:5]
    r = measured["rules"].get(rid)
    if not r:
        continue
    lines = [f"Verdict: **{r['verdict']}** — measured by `tests/verify/{rid}/` on {where}."]
    if r["verdict"] == "GPU-ONLY":
        lines.append("")
        lines.append("The effect exists only on a CUDA device; the CPU suite checks that leaklint flags the leaky "
                     "scenario and not the fixed one, and the CUDA mode of the suite measures it when a GPU is present.")
    else:
        lines.append("")
        lines.append(f"- {r['metric']}: leaky **{r['leaky']}**, fixed **{r['fixed']}**.")
        for d in r.get("details", [])[:4]:
            lines.append(f"- {d}")
    for c in r.get("claim_notes", []) or []:
        lines.append(f"- Note: {c}")
    lines.append("")
    lines.append(f"Plot and full table: [docs/verification](../verification/README.md).")
    body = "\n".join(lines) + "\n"
    text = doc.read_text()
    new = re.sub(r"(## Measured effect\n)(.*?)(?=\n## |\Z)", lambda m: m.group(1) + body, text, flags=re.S)
    doc.write_text(new)
    print("updated", doc.name)
