#!/usr/bin/env bash
# The files users install the Argo CD health checks with
# (helm/heartbeat-operator/argocd/argocd-cm-patch.yaml, argo-cd-values.yaml)
# carry every kind's health.lua word for word, after conditions.lua (what the
# kinds share), under Argo CD's key for it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../../.."
bash "$root/scripts/argocd-health-config.sh" --check
python3 - "$root/helm/heartbeat-operator/argocd" <<'PY'
import os, sys, yaml

directory = sys.argv[1]
kinds = sorted(os.listdir(os.path.join(directory, "heartbeat.dev")))
patch = yaml.safe_load(open(os.path.join(directory, "argocd-cm-patch.yaml")))
values = yaml.safe_load(open(os.path.join(directory, "argo-cd-values.yaml")))
assert (patch["kind"], patch["metadata"]["name"]) == ("ConfigMap", "argocd-cm"), patch["metadata"]
failed = 0
for kind in ["Agent", "HeartbeatPolicy", "HeartbeatRun"]:
    if kind not in kinds:
        print("FAIL no health check for %s" % kind)
        failed += 1
for kind in kinds:
    key = "resource.customizations.health.heartbeat.dev_" + kind
    script = open(os.path.join(directory, "conditions.lua")).read() + open(
        os.path.join(directory, "heartbeat.dev", kind, "health.lua")).read()
    for name, data in (("argocd-cm-patch.yaml", patch["data"]), ("argo-cd-values.yaml", values["configs"]["cm"])):
        ok = data.get(key) == script
        print("%s %s: %s" % ("ok  " if ok else "FAIL", name, key))
        failed += not ok
sys.exit(1 if failed else 0)
PY
