#!/usr/bin/env python3
"""Keeps the documentation honest where a machine can tell.

  check_docs.py --root SOURCE_DIR --operator PATH_TO_heartbeat-operator

Fails (exit 1, one line per problem) when
  - a flag of `heartbeat-operator --help` is not in docs/reference.md;
  - a metric family the operator registers is not in docs/operations.md;
  - a repository path cited in backticks (or linked) in README.md or docs/
    does not exist;
  - a default docs/reference.md states for an Agent or HeartbeatPolicy field
    differs from the CRD's, or names a field the CRD does not have;
  - the README's test command is not the one .ci/run runs.
"""
import argparse
import glob
import itertools
import os
import re
import subprocess
import sys

import yaml

problems = []


def problem(text):
    problems.append(text)


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def without_fences(text):
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def inline_code(text):
    return re.findall(r"`([^`\n]+)`", without_fences(text))


# --- flags --------------------------------------------------------------------

def check_flags(root, operator):
    out = subprocess.run([operator, "--help"], capture_output=True, text=True, timeout=30)
    help_text = out.stdout + out.stderr
    flags = re.findall(r"^\s+(--[a-z0-9][a-z0-9-]*)", help_text, flags=re.M)
    if not flags:
        problem(f"{operator} --help lists no flags (exit {out.returncode})")
    reference = set(inline_code(read(root, "docs/reference.md")))
    for flag in flags:
        if flag not in reference:
            problem(f"docs/reference.md: flag `{flag}` of heartbeat-operator --help is not documented")
    return len(flags)


# --- metrics ------------------------------------------------------------------

METRIC_CALL = re.compile(
    r'(?:describe|counter_add|gauge_set|observe)\(\s*"([a-z_][a-z0-9_]*)"')
METRIC_CONST = re.compile(r'=\s*"((?:heartbeat|controller_runtime|workqueue|rest_client|leader_election|gen_ai)_[a-z0-9_]+)"')


def registered_metrics(root):
    names = set()
    for folder in ("operator", "controllers", "kube"):
        for path in glob.glob(os.path.join(root, folder, "**", "*.*"), recursive=True):
            if not path.endswith((".cpp", ".h")):
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            names.update(n for n in METRIC_CALL.findall(text) if "_" in n)
            for name in METRIC_CONST.findall(text):
                if "Metric" in text[max(0, text.find(name) - 80):text.find(name)]:
                    names.add(name)
    return names


def check_metrics(root):
    names = registered_metrics(root)
    if not names:
        problem("no metric family found in operator/, controllers/, kube/")
    documented = set()
    for code in inline_code(read(root, "docs/operations.md")):
        m = re.fullmatch(r"([a-z_][a-z0-9_]*)(\{[^}]*\})?", code)
        if m:
            documented.add(m.group(1))
    for name in sorted(names):
        if name not in documented:
            problem(f"docs/operations.md: metric family `{name}` the operator registers is not documented")
    return len(names)


# --- paths --------------------------------------------------------------------

def expand_braces(word):
    m = re.search(r"\{([^{}]*)\}", word)
    if not m:
        return [word]
    return list(itertools.chain.from_iterable(
        expand_braces(word[:m.start()] + alt + word[m.end():]) for alt in m.group(1).split(",")))


def path_exists(root, rel):
    rel = rel.rstrip("/")
    full = os.path.join(root, rel)
    # A module named without its extension (`controllers/runtime/metrics`).
    return os.path.exists(full) or any(os.path.exists(full + ext) for ext in (".h", ".cpp"))


def check_paths(root):
    tops = {e for e in os.listdir(root) if not e.startswith(".") and e != "build"
            and not e.startswith("build-")} | {".ci"}
    cited = 0
    docs = ["README.md", "CHANGELOG.md"] + sorted(
        os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs", "*.md")))
    for doc in docs:
        if not os.path.exists(os.path.join(root, doc)):
            problem(f"{doc} is missing")
            continue
        text = read(root, doc)
        for code in inline_code(text):
            for word in code.split():
                word = word.strip(",;:()")
                if not re.fullmatch(r"[A-Za-z0-9_.\-/{},]+", word) or "..." in word:
                    continue
                if any(re.fullmatch(r"[A-Z]{2,}", seg) for seg in word.split("/")):
                    continue  # a placeholder: `tests/fuzz/corpus/TARGET/`
                first = word.split("/", 1)[0]
                if first not in tops or ("/" not in word and not os.path.isfile(os.path.join(root, word))):
                    continue
                for rel in expand_braces(word):
                    cited += 1
                    if not path_exists(root, rel):
                        problem(f"{doc}: `{rel}` does not exist")
        # Relative links: [text](path), [text](path#anchor), [text](#anchor).
        for target in re.findall(r"\]\(([^)\s]+)\)", without_fences(text)):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            rel = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
            cited += 1
            if not os.path.exists(os.path.join(root, rel)):
                problem(f"{doc}: link `{target}` points at {rel}, which does not exist")
            elif anchor and rel.endswith(".md") and anchor not in anchors(read(root, rel)):
                problem(f"{doc}: link `{target}`: {rel} has no heading #{anchor}")
    return cited


def anchors(markdown):
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to -."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", without_fences(markdown), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


# --- CRD defaults -------------------------------------------------------------

NO_DEFAULT = {"none", "unset", "unlimited", "off", "(required)", "one required"}


def crd_schema(root, file):
    doc = yaml.safe_load(read(root, os.path.join("crds", file)))
    return doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def lookup(schema, dotted):
    node = schema
    for part in dotted.split("."):
        items = part.endswith("[]")
        part = part[:-2] if items else part
        props = node.get("properties") or {}
        if part not in props:
            return None
        node = props[part]
        if items:
            node = node.get("items") or {}
    return node


def literal(cell):
    """The value a default cell states, or NO_DEFAULT, or None for prose."""
    cell = cell.strip()
    if cell in NO_DEFAULT:
        return NO_DEFAULT
    m = re.fullmatch(r"`([^`]*)`", cell)
    if m:
        cell = m.group(1)
        if cell == '""':
            return ""
    if cell in ("true", "false"):
        return cell == "true"
    if re.fullmatch(r"-?[0-9][0-9,]*", cell):
        return int(cell.replace(",", ""))
    if m and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", cell):
        return cell
    return None


def table_rows(text, header):
    start = text.find(header)
    if start < 0:
        return []
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


def compare(where, schema, field, stated):
    node = lookup(schema, field)
    if node is None:
        problem(f"docs/reference.md: {where} names `{field}`, which the CRD does not have")
        return 0
    has = "default" in node
    if stated is NO_DEFAULT:
        if has:
            problem(f"docs/reference.md: `{field}` says no default; the CRD defaults it to {node['default']!r}")
    elif stated is not None and has and node["default"] != stated:
        problem(f"docs/reference.md: `{field}` default {stated!r}; the CRD says {node['default']!r}")
    return 1


def check_defaults(root):
    reference = read(root, "docs/reference.md")
    checked = 0
    agent = crd_schema(root, "heartbeat.dev_agents.yaml")["properties"]["spec"]
    for row in table_rows(reference, "| field | default | meaning |"):
        if len(row) != 3:
            continue
        fields = re.findall(r"`([^`]+)`", row[0])
        if not fields or not all(re.fullmatch(r"[A-Za-z.\[\]{},]+", f) for f in fields):
            continue
        fields = list(itertools.chain.from_iterable(expand_braces(f) for f in fields))
        cells = [row[1]]
        if len(fields) > 1 and len(row[1].split(", ")) == len(fields):
            cells = row[1].split(", ")
        for i, field in enumerate(fields):
            checked += compare("the Agent table", agent, field, literal(cells[i] if len(cells) > 1 else cells[0]))
    policy = crd_schema(root, "heartbeat.dev_heartbeatpolicies.yaml")
    for row in table_rows(reference, "| field | meaning |"):
        if len(row) != 2:
            continue
        m = re.fullmatch(r"`(spec\.[A-Za-z.]+)`", row[0])
        if not m:
            continue
        said = re.search(r"`([^`]+)` \(the default\)|[Dd]efault `([^`]+)`", row[1])
        stated = literal("`" + (said.group(1) or said.group(2)) + "`") if said else None
        checked += compare("the HeartbeatPolicy table", policy, m.group(1), stated)
    if checked == 0:
        problem("docs/reference.md: no field default checked (the tables' headers moved?)")
    return checked


# --- the README's commands ----------------------------------------------------

def check_commands(root):
    readme = read(root, "README.md")
    block = re.search(r"```sh\n(scripts/demo\.sh[^\n]*\nscripts/test\.sh[^\n]*\n)```", readme)
    if not block:
        problem("README.md: the two commands (scripts/demo.sh, scripts/test.sh) are not in one sh block")
        return
    ci = read(root, ".ci/run")
    if not re.search(r"^exec bash scripts/test\.sh\s*$", ci, flags=re.M):
        problem(".ci/run does not run the README's test command, scripts/test.sh")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--operator", required=True)
    args = parser.parse_args()
    flags = check_flags(args.root, args.operator)
    metrics = check_metrics(args.root)
    paths = check_paths(args.root)
    defaults = check_defaults(args.root)
    check_commands(args.root)
    for p in problems:
        print(p)
    print(f"docs check: {flags} flags, {metrics} metric families, {paths} paths, "
          f"{defaults} field defaults; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
