#!/usr/bin/env bash
# Writes the chart's Argo CD health checks (helm/heartbeat-operator/argocd/
# conditions.lua, what they share, in front of each heartbeat.dev/KIND/health.lua:
# Argo CD runs each kind's script alone) into the two files users install them with:
#   argocd/argocd-cm-patch.yaml  a patch of argocd-cm (kubectl patch, kustomize)
#   argocd/argo-cd-values.yaml   values for the argo-cd Helm chart (configs.cm)
# --check: write nothing, exit 1 when either file differs from the scripts
# (tests/unit/argocd runs it).
set -euo pipefail
dir="$(cd "$(dirname "$0")/../helm/heartbeat-operator/argocd" && pwd)"
python3 - "$dir" "${1:-}" <<'PY'
import os, sys

directory, mode = sys.argv[1], sys.argv[2]
group = "heartbeat.dev"
kinds = sorted(os.listdir(os.path.join(directory, group)))
prelude = open(os.path.join(directory, "conditions.lua")).read()


def entries(indent):
    out = []
    for kind in kinds:
        script = prelude + open(os.path.join(directory, group, kind, "health.lua")).read()
        out.append("%sresource.customizations.health.%s_%s: |\n" % (indent, group, kind))
        out += [(indent + "  " + line).rstrip() + "\n" for line in script.splitlines()]
    return "".join(out)


header = "# Generated from conditions.lua and heartbeat.dev/*/health.lua by scripts/argocd-health-config.sh; do not edit.\n"
files = {
    "argocd-cm-patch.yaml": header
    + "# kubectl -n argocd patch configmap argocd-cm --type merge --patch-file argocd-cm-patch.yaml\n"
    + "# or a kustomize patch of Argo CD's install.\n"
    + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\ndata:\n"
    + entries("  "),
    "argo-cd-values.yaml": header
    + "# helm upgrade ARGOCD_RELEASE argo/argo-cd --reuse-values -f argo-cd-values.yaml\n"
    + "configs:\n  cm:\n"
    + entries("    "),
}
stale = []
for name, text in files.items():
    path = os.path.join(directory, name)
    current = open(path).read() if os.path.exists(path) else None
    if current == text:
        continue
    if mode == "--check":
        stale.append(name)
    else:
        open(path, "w").write(text)
if stale:
    print("stale: %s; run scripts/argocd-health-config.sh" % ", ".join(stale), file=sys.stderr)
    sys.exit(1)
PY
