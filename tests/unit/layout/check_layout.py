#!/usr/bin/env python3
"""The tree's layers, checked: no #include runs up.

Libraries from the bottom: api, http, kube, otlp, controllers, operator;
inside controllers/ its concept folders from the bottom: schedule, model,
spend, policy, run, pod, agent, plan, runtime, shell. A file may include its
own folder and anything below it, never above. Run with --self-test to see
it flag a planted upward include.
"""
import argparse
import pathlib
import re
import sys

# Bottom first. A folder not listed here is a program or test, above them all.
LIBRARIES = ["api", "http", "kube", "otlp", "controllers", "operator"]
CONTROLLERS = ["schedule", "model", "spend", "policy", "run", "pod", "agent",
               "plan", "runtime", "shell"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer(path):
    """(library rank, concept rank) of a repository path, or None."""
    parts = pathlib.PurePosixPath(path).parts
    if not parts or parts[0] not in LIBRARIES:
        return None
    rank = LIBRARIES.index(parts[0])
    if parts[0] != "controllers":
        return (rank, 0)
    if len(parts) < 3:
        return (rank, -1)  # a file at controllers/'s top: none may exist
    if parts[1] not in CONTROLLERS:
        return (rank, -1)
    return (rank, CONTROLLERS.index(parts[1]))


def upward(source, included):
    """Why `source` may not include `included`, or None."""
    a, b = layer(source), layer(included)
    if a is None or b is None:
        return None
    if b[1] == -1 or a[1] == -1:
        return f"{source}: controllers/ keeps its files in concept folders ({', '.join(CONTROLLERS)})"
    if b > a:
        return f"{source} includes {included}, a layer above it"
    return None


def problems(root):
    out = []
    for lib in LIBRARIES:
        for f in sorted((root / lib).rglob("*")):
            if f.suffix not in (".h", ".cpp"):
                continue
            rel = f.relative_to(root).as_posix()
            for inc in INCLUDE.findall(f.read_text(encoding="utf-8", errors="replace")):
                why = upward(rel, inc)
                if why:
                    out.append(why)
    return out


def self_test():
    planted = [("controllers/model/agent_spec.h", "controllers/agent/agent_decision.h"),
               ("http/client.cpp", "kube/errors.h"),
               ("controllers/spend/pricing.h", "controllers/policy/policy_status.h"),
               ("controllers/foo.h", "controllers/model/names.h")]
    allowed = [("controllers/agent/agent_decision.h", "controllers/model/agent_spec.h"),
               ("kube/errors.h", "http/http.h"),
               ("operator/manager.cpp", "controllers/shell/agent_reconciler.h"),
               ("controllers/model/names.h", "controllers/model/json_util.h")]
    missed = [p for p in planted if upward(*p) is None]
    wrong = [p for p in allowed if upward(*p) is not None]
    for p in missed:
        print("not flagged:", *p)
    for p in wrong:
        print("flagged though allowed:", *p)
    return 1 if missed or wrong else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=".")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    found = problems(pathlib.Path(args.root))
    for p in found:
        print(p)
    print(f"{len(found)} upward includes")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
