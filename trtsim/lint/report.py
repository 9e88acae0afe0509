"""The lint's outputs: the text report, the JSON document (docs/JSON.md, ``trtsim/lint``) and
SARIF 2.1.0 for code-scanning UIs (one rule, one result per finding at the gate, the
collective as a related location)."""

from __future__ import annotations

import os

from .findings import LintResult

RULE_ID = "trtsim-rank-local-gate"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
HELP_URI = "https://github.com/trtsim/trtsim/blob/main/docs/LINT.md"


def text_report(result: LintResult, explain: bool = False) -> str:
    """What ``trtsim lint`` prints."""
    parts = [f.text() for f in result.findings]
    if explain:
        if result.suppressed:
            lines = ["suppressed gates (# trtsim: uniform(...) -- reason):"]
            for s in result.suppressed:
                groups = ", ".join(s.groups) or "every group"
                lines.append(f"  {s.site}: `{s.condition}` uniform on {groups} -- {s.reason}")
                lines += [f"    would decide {c}" for c in s.collectives]
            parts.append("\n".join(lines))
        else:
            parts.append("suppressed gates: none")
    for why in result.skipped:
        parts.append(f"skipped: {why}")
    noun = "finding" if len(result.findings) == 1 else "findings"
    parts.append(f"trtsim lint: {len(result.findings)} {noun} in {result.files} files "
                 f"({result.functions} functions, {result.collectives} collective calls, "
                 f"{len(result.suppressed)} suppressed gates) in {result.seconds:.2f} s")
    return "\n\n".join(parts)


def _uri(path: str) -> str:
    rel = path if not os.path.isabs(path) else os.path.relpath(path)
    return rel.replace(os.sep, "/")


def _location(path: str, line: int, col: int, message: str | None = None) -> dict:
    loc = {"physicalLocation": {"artifactLocation": {"uri": _uri(path)},
                                "region": {"startLine": line, "startColumn": col + 1}}}
    if message:
        loc["message"] = {"text": message}
    return loc


def sarif(result: LintResult, version: str) -> dict:
    """The SARIF 2.1.0 log of a lint run."""
    results = []
    for f in result.findings:
        c, g = f.collective, f.gate
        related = [dict(_location(c.path, c.line, c.col, f"{c.op} on the {f.group} group"),
                        id=1)]
        results.append({
            "ruleId": RULE_ID, "level": "error",
            "message": {"text": f"`{g.condition}` is rank-local on the {f.group} group and "
                        f"decides whether {c.op} at {c.site} is reached. "
                        f"Rank-local: {'; '.join(f.origins)}. Assumption: {f.assumption}."},
            "locations": [_location(g.path, g.line, g.col)],
            "relatedLocations": related,
            "partialFingerprints": {"gateCollective/v1": f"{g.site}|{g.condition}|{c.op}|"
                                                         f"{f.group}"}})
    rule = {"id": RULE_ID, "name": "RankLocalGate",
            "shortDescription": {"text": "A collective is gated by rank-local state"},
            "fullDescription": {"text": "A condition whose value can differ between the "
                                "members of a collective's group decides whether the "
                                "collective is reached: the members that skip it leave the "
                                "others waiting (a hang) or pair the wrong calls."},
            "helpUri": HELP_URI, "defaultConfiguration": {"level": "error"}}
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0",
            "runs": [{"tool": {"driver": {"name": "trtsim lint", "version": version,
                                          "informationUri": HELP_URI, "rules": [rule]}},
                      "results": results}]}
