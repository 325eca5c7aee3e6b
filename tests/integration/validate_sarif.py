#!/usr/bin/python3
"""Validate a SARIF log against the SARIF 2.1.0 schema and GitHub code scanning's rules.

Usage: validate_sarif.py LOG.sarif sarif-schema-2.1.0.json [--min-results N]

Uses Debian's python3-jsonschema (Draft4Validator, the schema's draft). Beyond the schema,
checks what GitHub code scanning requires or silently drops without: per rule a
shortDescription/fullDescription (<= 1024 characters) and help text; per result a message
text, a location with a full region (startLine/startColumn/endLine/endColumn), relative
URIs based on %SRCROOT% declared in originalUriBaseIds. Those checks also cover what the
final (errata 01) schema tightened over the 2.1.0-rtm.5 copy the build fetches: `version`
and `runs` required as the string "2.1.0" and an array, regions anchored by startLine.
--min-results N fails a log with fewer results in all (a validation of nothing passes
nothing). Prints every violation found and
exits 1 if there is any, 2 on usage or input errors, 0 otherwise.
"""

from __future__ import annotations

import json
import sys
from typing import Any

try:
    from jsonschema import Draft4Validator
except ImportError:  # pragma: no cover - depends on the machine
    print("validate_sarif.py: needs python3-jsonschema (apt install python3-jsonschema)", file=sys.stderr)
    sys.exit(2)

MAX_DESCRIPTION = 1024
MAX_RESULTS_PER_RUN = 25_000
MAX_RULES_PER_RUN = 25_000
MAX_TAGS_PER_RULE = 20
MAX_LOCATIONS_PER_RESULT = 1_000
PRECISIONS = {"very-high", "high", "medium", "low"}
PROBLEM_SEVERITIES = {"error", "warning", "recommendation"}
LEVELS = {"none", "note", "warning", "error"}
REGION_KEYS = ("startLine", "startColumn", "endLine", "endColumn")


def load_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"validate_sarif.py: cannot read {path}: {e}", file=sys.stderr)
        sys.exit(2)


def json_path(parts: Any) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def text_of(obj: Any, key: str) -> str | None:
    """obj[key]["text"] when it is a string, else None."""
    if not isinstance(obj, dict):
        return None
    inner = obj.get(key)
    if not isinstance(inner, dict):
        return None
    text = inner.get("text")
    return text if isinstance(text, str) else None


def schema_violations(doc: Any, schema: Any) -> list[str]:
    validator = Draft4Validator(schema, format_checker=Draft4Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"schema: {json_path(e.absolute_path)}: {e.message}" for e in errors]


def check_rules(run: dict, where: str, out: list[str]) -> list[str]:
    driver = run.get("tool", {}).get("driver", {})
    if not isinstance(driver, dict) or not driver.get("name"):
        out.append(f"{where}.tool.driver.name: missing")
        return []
    rules = driver.get("rules", [])
    if not isinstance(rules, list):
        return []
    if len(rules) > MAX_RULES_PER_RUN:
        out.append(f"{where}: {len(rules)} rules exceed GitHub's limit of {MAX_RULES_PER_RUN}")
    ids: list[str] = []
    for i, rule in enumerate(rules):
        rw = f"{where}.tool.driver.rules[{i}]"
        if not isinstance(rule, dict):
            out.append(f"{rw}: not an object")
            ids.append("")
            continue
        rid = rule.get("id")
        ids.append(rid if isinstance(rid, str) else "")
        if not rid:
            out.append(f"{rw}.id: missing")
        for key in ("shortDescription", "fullDescription"):
            text = text_of(rule, key)
            if not text:
                out.append(f"{rw}.{key}.text: missing or empty (required by GitHub)")
            elif len(text) > MAX_DESCRIPTION:
                out.append(f"{rw}.{key}.text: {len(text)} characters, GitHub allows {MAX_DESCRIPTION}")
        if not text_of(rule, "help"):
            out.append(f"{rw}.help.text: missing or empty (required by GitHub)")
        level = rule.get("defaultConfiguration", {}).get("level")
        if level is not None and level not in LEVELS:
            out.append(f"{rw}.defaultConfiguration.level: {level!r} is not a SARIF level")
        props = rule.get("properties", {})
        if isinstance(props, dict):
            tags = props.get("tags", [])
            if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
                out.append(f"{rw}.properties.tags: must be a list of strings")
            elif len(tags) > MAX_TAGS_PER_RULE:
                out.append(f"{rw}.properties.tags: {len(tags)} tags, GitHub allows {MAX_TAGS_PER_RULE}")
            precision = props.get("precision")
            if precision is not None and precision not in PRECISIONS:
                out.append(f"{rw}.properties.precision: {precision!r} not one of {sorted(PRECISIONS)}")
            severity = props.get("problem.severity")
            if severity is not None and severity not in PROBLEM_SEVERITIES:
                out.append(
                    f"{rw}.properties.problem.severity: {severity!r} not one of {sorted(PROBLEM_SEVERITIES)}"
                )
    seen: set[str] = set()
    for i, rid in enumerate(ids):
        if rid and rid in seen:
            out.append(f"{where}.tool.driver.rules[{i}].id: duplicate id {rid!r}")
        seen.add(rid)
    return ids


def check_artifact(loc: dict, where: str, base_ids: dict, out: list[str]) -> None:
    artifact = loc.get("artifactLocation")
    if not isinstance(artifact, dict) or not isinstance(artifact.get("uri"), str):
        out.append(f"{where}.artifactLocation.uri: missing")
        return
    uri = artifact["uri"]
    base = artifact.get("uriBaseId")
    absolute = "://" in uri or uri.startswith("file:")
    if not absolute and base != "%SRCROOT%":
        out.append(f"{where}.artifactLocation: relative uri {uri!r} needs uriBaseId \"%SRCROOT%\"")
    if base is not None and base not in base_ids:
        out.append(f"{where}.artifactLocation.uriBaseId: {base!r} is not declared in originalUriBaseIds")
    if " " in uri:
        out.append(f"{where}.artifactLocation.uri: {uri!r} is not percent-encoded")


def check_region(region: Any, where: str, out: list[str], full: bool) -> None:
    if not isinstance(region, dict):
        if full:
            out.append(f"{where}.region: missing (GitHub needs {', '.join(REGION_KEYS)})")
        return
    keys = REGION_KEYS if full else ("startLine",)
    for key in keys:
        value = region.get(key)
        if not isinstance(value, int) or value < 1:
            out.append(f"{where}.region.{key}: missing or < 1")
    start, end = region.get("startLine"), region.get("endLine")
    if isinstance(start, int) and isinstance(end, int):
        if end < start:
            out.append(f"{where}.region: endLine {end} before startLine {start}")
        elif end == start:
            sc, ec = region.get("startColumn"), region.get("endColumn")
            if isinstance(sc, int) and isinstance(ec, int) and ec < sc:
                out.append(f"{where}.region: endColumn {ec} before startColumn {sc}")


def check_results(run: dict, where: str, rule_ids: list[str], base_ids: dict, out: list[str]) -> None:
    results = run.get("results")
    if not isinstance(results, list):
        out.append(f"{where}.results: missing (GitHub needs an array, possibly empty)")
        return
    if len(results) > MAX_RESULTS_PER_RUN:
        out.append(f"{where}: {len(results)} results exceed GitHub's limit of {MAX_RESULTS_PER_RUN}")
    for i, res in enumerate(results):
        rw = f"{where}.results[{i}]"
        if not isinstance(res, dict):
            out.append(f"{rw}: not an object")
            continue
        if not text_of(res, "message"):
            out.append(f"{rw}.message.text: missing or empty (required by GitHub)")
        rid = res.get("ruleId")
        index = res.get("ruleIndex")
        if not rid and index is None:
            out.append(f"{rw}: needs ruleId or ruleIndex")
        if isinstance(index, int):
            if not 0 <= index < len(rule_ids):
                out.append(f"{rw}.ruleIndex: {index} out of range (driver has {len(rule_ids)} rules)")
            elif rid and rule_ids[index] != rid:
                out.append(f"{rw}.ruleIndex: points at {rule_ids[index]!r} but ruleId is {rid!r}")
        elif rid and rule_ids and rid not in rule_ids:
            out.append(f"{rw}.ruleId: {rid!r} is not in tool.driver.rules")
        locations = res.get("locations")
        if not isinstance(locations, list) or not locations:
            out.append(f"{rw}.locations: GitHub needs at least one location")
            locations = []
        if len(locations) > MAX_LOCATIONS_PER_RESULT:
            out.append(f"{rw}.locations: more than {MAX_LOCATIONS_PER_RESULT}")
        for j, loc in enumerate(locations):
            phys = loc.get("physicalLocation") if isinstance(loc, dict) else None
            lw = f"{rw}.locations[{j}].physicalLocation"
            if not isinstance(phys, dict):
                out.append(f"{lw}: missing")
                continue
            check_artifact(phys, lw, base_ids, out)
            check_region(phys.get("region"), lw, out, full=True)
        for j, loc in enumerate(res.get("relatedLocations", []) or []):
            phys = loc.get("physicalLocation") if isinstance(loc, dict) else None
            lw = f"{rw}.relatedLocations[{j}].physicalLocation"
            if isinstance(phys, dict):
                check_artifact(phys, lw, base_ids, out)
                check_region(phys.get("region"), lw, out, full=False)
        fingerprints = res.get("partialFingerprints", {})
        if not isinstance(fingerprints, dict) or not all(isinstance(v, str) for v in fingerprints.values()):
            out.append(f"{rw}.partialFingerprints: values must be strings")
        for j, sup in enumerate(res.get("suppressions", []) or []):
            if not isinstance(sup, dict) or sup.get("kind") not in ("inSource", "external"):
                out.append(f"{rw}.suppressions[{j}].kind: must be \"inSource\" or \"external\"")


def github_violations(doc: Any) -> list[str]:
    out: list[str] = []
    if not isinstance(doc, dict):
        return ["$: not a JSON object"]
    if doc.get("version") != "2.1.0":
        out.append(f"$.version: {doc.get('version')!r}, GitHub needs \"2.1.0\"")
    runs = doc.get("runs")
    if not isinstance(runs, list) or not runs:
        out.append("$.runs: GitHub needs at least one run")
        return out
    for r, run in enumerate(runs):
        where = f"$.runs[{r}]"
        if not isinstance(run, dict):
            out.append(f"{where}: not an object")
            continue
        base_ids = run.get("originalUriBaseIds", {})
        if not isinstance(base_ids, dict):
            base_ids = {}
        srcroot = base_ids.get("%SRCROOT%")
        if not isinstance(srcroot, dict) or not isinstance(srcroot.get("uri"), str):
            out.append(f"{where}.originalUriBaseIds: must declare \"%SRCROOT%\" with a uri")
        else:
            uri = srcroot["uri"]
            if not uri.startswith("file:///") or not uri.endswith("/"):
                out.append(f"{where}.originalUriBaseIds.%SRCROOT%.uri: {uri!r} must be file:///.../")
        if run.get("columnKind") not in ("utf16CodeUnits", "unicodeCodePoints"):
            out.append(f"{where}.columnKind: missing (set \"utf16CodeUnits\")")
        rule_ids = check_rules(run, where, out)
        check_results(run, where, rule_ids, base_ids, out)
        for i, inv in enumerate(run.get("invocations", []) or []):
            if not isinstance(inv, dict) or not isinstance(inv.get("executionSuccessful"), bool):
                out.append(f"{where}.invocations[{i}].executionSuccessful: missing")
    return out


def main(argv: list[str]) -> int:
    min_results = 0
    if len(argv) == 5 and argv[3] == "--min-results" and argv[4].isdigit():
        min_results = int(argv[4])
        argv = argv[:3]
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    doc = load_json(argv[1])
    schema = load_json(argv[2])
    if "2.1.0" not in str(schema.get("title", "")) if isinstance(schema, dict) else True:
        print(f"validate_sarif.py: {argv[2]} is not the SARIF 2.1.0 schema", file=sys.stderr)
        return 2
    violations = schema_violations(doc, schema) + github_violations(doc)
    runs = doc.get("runs") if isinstance(doc, dict) else None
    count = sum(len(r.get("results") or []) for r in runs if isinstance(r, dict)) if isinstance(runs, list) else 0
    if count < min_results:
        violations.append(f"$.runs[*].results: {count} result(s), expected at least {min_results}")
    for v in violations:
        print(v)
    if violations:
        print(f"{argv[1]}: {len(violations)} violation(s)", file=sys.stderr)
        return 1
    print(f"{argv[1]}: valid SARIF 2.1.0 for GitHub code scanning")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
