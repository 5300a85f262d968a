#!/usr/bin/env python3
"""Checks a rendered heartbeat-operator chart, as the API server returned it
from `kubectl apply --dry-run=server -o json` (a v1 List).

  check_render.py LIST.json --leader-elect=true|false [--watch-namespaces=NS[,NS...]]
                  [--release-namespace=NS]

--watch-namespaces is the list the render was given, in its order (duplicates
allowed: the chart drops them); absent or empty: all namespaces.

Fails (exit 1, one line per problem) unless:
- the Deployment runs with the restricted security context, POD_NAMESPACE
  from the downward API, /healthz and /readyz probes on the health port, and
  the expected --leader-elect flag and --namespace flag (the watched
  namespaces comma-joined in the order given, or none for all namespaces);
- RBAC has no wildcard in apiGroups, resources or verbs, is a ClusterRole when
  all namespaces are watched and otherwise one Role and RoleBinding in each
  watched namespace (the same rules in each, none elsewhere, no ClusterRole),
  and grants exactly the verbs in EXACT on each resource and no other
  resource: what the operator calls, and what each per-agent Role grants the
  runner (patch on its Lease; get, update on its memory ConfigMap);
- with leader election, a Role in the release namespace lets it get and
  update its Lease by name and create Leases;
- the metrics edge (check_metrics_tls): --metrics-secure as given; with
  --metrics-cert-secret the Secret is mounted read-only as --metrics-cert-dir
  and no other certificate flag is passed, without it the self-signed
  certificate names the metrics Service; the Service's metrics port is named
  and has the appProtocol of its scheme (https when secure), and a
  ServiceMonitor, when rendered, scrapes that port with that scheme, verifying
  the server with the Secret's ca.crt and the Service's DNS name, or skipping
  verification only when there is no Secret to verify with.
"""
import argparse
import json
import sys

# (apiGroup, resource) -> exactly the verbs the operator holds where it
# manages Agents: each is a call in the code (docs/security.md, "The
# operator's rights", has the table with the call sites), or a verb the
# per-agent Role grants the runner (Kubernetes refuses a Role that grants
# more than its creator holds). Kept in step with
# controllers/shell/agent_reconciler.cpp, agent_pass_writer.cpp,
# policy_status_writer.cpp, cluster_cache.cpp (informers: list, watch) and
# controllers/pod/job_builder.cpp (build_agent_objects).
EXACT = {
    ("heartbeat.dev", "agents"): {"list", "watch"},
    ("heartbeat.dev", "agents/status"): {"update"},
    ("heartbeat.dev", "heartbeatruns"): {"get", "list", "watch", "create", "patch", "delete"},
    ("heartbeat.dev", "heartbeatruns/status"): {"patch"},
    ("heartbeat.dev", "heartbeatpolicies"): {"list", "watch"},
    ("heartbeat.dev", "heartbeatpolicies/status"): {"patch"},
    ("batch", "jobs"): {"get", "list", "watch", "create", "patch", "delete"},
    ("", "pods"): {"list", "watch"},
    ("coordination.k8s.io", "leases"): {"get", "list", "watch", "create", "patch"},
    ("", "configmaps"): {"get", "create", "update"},
    ("", "serviceaccounts"): {"get", "create"},
    ("rbac.authorization.k8s.io", "roles"): {"get", "create", "delete"},
    ("rbac.authorization.k8s.io", "rolebindings"): {"get", "create", "delete"},
    ("", "events"): {"create"},
}
# What the per-agent Role grants the runner (build_agent_objects): the
# operator must hold it too.
RUNNER_ROLE = {
    ("coordination.k8s.io", "leases"): {"patch"},
    ("", "configmaps"): {"get", "update"},
}

problems = []


def problem(text):
    problems.append(text)


def granted(rules, group, resource, named_only_ok=False):
    verbs = set()
    for r in rules:
        if r.get("resourceNames") and not named_only_ok:
            continue
        if group in r.get("apiGroups", []) and resource in r.get("resources", []):
            verbs |= set(r.get("verbs", []))
    return verbs


def no_wildcards(obj):
    name = f'{obj["kind"]} {obj["metadata"]["name"]}'
    for i, r in enumerate(obj.get("rules", [])):
        for field in ("apiGroups", "resources", "verbs", "resourceNames"):
            for v in r.get(field, []):
                if "*" in v:
                    problem(f"{name}: rules[{i}].{field} has a wildcard {v!r}")


# The labels controllers/pod/job_builder.cpp (labels_for, names.h) puts on every
# heartbeat Pod; helm_chart_test.sh checks names.h still says so.
HEARTBEAT_POD_LABELS = {"app.kubernetes.io/managed-by": "heartbeat-operator",
                        "heartbeat.dev/agent": "bot", "heartbeat.dev/run": "bot-1800000000"}
# A Pod of the namespace that is not a heartbeat Pod (a peer's).
OTHER_POD_LABELS = {"app": "web"}
OPERATOR_PORTS = set()  # filled from the Deployment: its container ports


def selects(selector, labels):
    """Kubernetes LabelSelector semantics (matchLabels, matchExpressions)."""
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e["key"], e["operator"], e.get("values", [])
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
    return True


def check_heartbeat_egress(p, ns, a):
    """Egress only to DNS, the API server and the model endpoints: every
    0.0.0.0/0 block cuts 169.254.0.0/16 out, no rule opens an operator port."""
    if p["spec"].get("policyTypes") != ["Egress"]:
        problem(f"the heartbeat egress NetworkPolicy in {ns} does not restrict Egress")
    rules = p["spec"].get("egress", [])
    dns = [r for r in rules if any(t.get("podSelector") for t in r.get("to", []))]
    if len(dns) != 1 or {(x["port"], x["protocol"]) for x in dns[0].get("ports", [])} != {
            (53, "UDP"), (53, "TCP")}:
        problem(f"{ns}: egress to DNS is not exactly port 53 of the DNS Pods: {dns}")
    for r in rules:
        if not r.get("to"):
            problem(f"{ns}: an egress rule allows any peer: {r}")
        if not r.get("ports"):
            problem(f"{ns}: an egress rule allows any port: {r}")
        for x in r.get("ports", []):
            if x.get("port") in OPERATOR_PORTS:
                problem(f"{ns}: egress to the operator's port {x['port']} is allowed")
        for t in r.get("to", []):
            block = t.get("ipBlock")
            if block and block["cidr"] == "0.0.0.0/0" and "169.254.0.0/16" not in block.get(
                    "except", []):
                problem(f"{ns}: egress to 0.0.0.0/0 does not cut out 169.254.0.0/16")
            if block is None and not (t.get("namespaceSelector") and t.get("podSelector")):
                problem(f"{ns}: egress to {t} is not an ipBlock nor the DNS Pods")


def check_network_policies(policies, a, watched, operator_labels):
    """With --network-policy: the operator admits metrics from the monitoring
    namespace only and its Pods are the ones selected; every watched
    namespace denies heartbeat Pods ingress and limits their egress, and
    those policies select heartbeat Pods and no other Pod."""
    if a.network_policy == "false":
        if policies:
            problem(f"{len(policies)} NetworkPolicy objects rendered though networkPolicy is off")
        return
    ops = [p for p in policies if p["metadata"]["namespace"] == a.release_namespace
           and not p["metadata"]["name"].endswith(("-heartbeat-pods", "-heartbeat-egress"))]
    if len(ops) != 1:
        problem(f"expected one operator NetworkPolicy in {a.release_namespace}, got {len(ops)}")
    for p in ops:
        if not selects(p["spec"]["podSelector"], operator_labels):
            problem(f"the operator NetworkPolicy does not select the operator's Pods "
                    f"{operator_labels}")
        if selects(p["spec"]["podSelector"], HEARTBEAT_POD_LABELS):
            problem("the operator NetworkPolicy selects heartbeat Pods")
        rules = p["spec"].get("ingress", [])
        if p["spec"].get("policyTypes") != ["Ingress"]:
            problem("the operator NetworkPolicy does not restrict Ingress")
        for rule in rules:
            if not rule.get("from"):
                problem(f"the operator NetworkPolicy admits anyone on {rule.get('ports')}")
            ports = [x.get("port") for x in rule.get("ports", [])]
            if "health" in ports:
                problem("the operator NetworkPolicy admits Pods to the health port")
            if "metrics" in ports:
                want = [{"namespaceSelector": {"matchLabels": {
                    "kubernetes.io/metadata.name": a.metrics_namespace}}}]
                if rule.get("from") != want:
                    problem(f"metrics is admitted from {rule.get('from')}, not {want}")
            if "wakeup" in ports and rule.get("from") != a.wakeup_from:
                problem(f"wakeup is admitted from {rule.get('from')}, not {a.wakeup_from}")
    for kind in ("heartbeat-pods", "heartbeat-egress"):
        found = {p["metadata"]["namespace"]: p for p in policies
                 if p["metadata"]["name"].endswith("-" + kind)}
        for ns in watched:
            p = found.get(ns)
            if p is None:
                if kind == "heartbeat-pods" or a.heartbeat_egress == "true":
                    problem(f"no {kind} NetworkPolicy in watched namespace {ns}")
                continue
            if not selects(p["spec"]["podSelector"], HEARTBEAT_POD_LABELS):
                problem(f"{kind} in {ns} does not select heartbeat Pods {HEARTBEAT_POD_LABELS}")
            for other in (OTHER_POD_LABELS, operator_labels):
                if selects(p["spec"]["podSelector"], other):
                    problem(f"{kind} in {ns} selects Pods that are not heartbeat Pods: {other}")
            if kind == "heartbeat-pods" and (p["spec"].get("ingress") or
                                             p["spec"].get("policyTypes") != ["Ingress"]):
                problem(f"the heartbeat-Pod NetworkPolicy in {ns} admits ingress")
            if kind == "heartbeat-egress":
                check_heartbeat_egress(p, ns, a)
        if kind == "heartbeat-egress" and a.heartbeat_egress == "false" and found:
            problem(f"heartbeat egress policies rendered though heartbeatEgress is off: {found}")


def check_edge_rbac(by_kind, a):
    """The secure metrics' ClusterRole (create tokenreviews and
    subjectaccessreviews, nothing else) and the scraper's (get /metrics).
    Taken out of by_kind: the operator's own RBAC is checked apart."""
    roles = {o["metadata"]["name"]: o for o in by_kind.get("ClusterRole", [])}
    reader = [o for n, o in roles.items() if n.endswith("-metrics-reader")]
    if len(reader) != 1 or reader[0]["rules"] != [{"nonResourceURLs": ["/metrics"],
                                                   "verbs": ["get"]}]:
        problem(f"expected one <release>-metrics-reader ClusterRole with get on /metrics: {reader}")
    auth = [o for n, o in roles.items() if n.endswith("-metrics-auth")]
    want = [{"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"],
             "verbs": ["create"]},
            {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"],
             "verbs": ["create"]}]
    if a.metrics_auth == "kubernetes" and (len(auth) != 1 or auth[0]["rules"] != want):
        problem(f"expected one <release>-metrics-auth ClusterRole granting {want}: {auth}")
    if a.metrics_auth == "none" and auth:
        problem("a metrics-auth ClusterRole is rendered though metrics.auth is none")
    for b in by_kind.get("ClusterRoleBinding", []):
        if b["roleRef"]["name"].endswith("-metrics-auth"):
            subjects = [(s["kind"], s.get("namespace")) for s in b.get("subjects", [])]
            if subjects != [("ServiceAccount", a.release_namespace)]:
                problem(f"the metrics-auth binding's subjects are {subjects}")
    edge = lambda o: o["metadata"]["name"].endswith(("-metrics-reader", "-metrics-auth"))
    for kind in ("ClusterRole", "ClusterRoleBinding"):
        if kind in by_kind:
            by_kind[kind] = [o for o in by_kind[kind] if not edge(o)]
            if not by_kind[kind]:
                del by_kind[kind]


CERT_DIR = "/etc/heartbeat-operator/metrics-certs"


def check_metrics_deployment(c, pod, a):
    """The operator's metrics flags and the cert Secret's volume."""
    args = c.get("args", [])
    secure, secret = a.metrics_secure == "true", a.metrics_cert_secret
    if f"--metrics-secure={a.metrics_secure}" not in args:
        problem(f"args lack --metrics-secure={a.metrics_secure}: {args}")
    cert_args = sorted(x for x in args if x.startswith(("--metrics-cert-dir=",
                                                        "--metrics-cert-hosts=")))
    service = a.metrics_host
    want = ([f"--metrics-cert-dir={CERT_DIR}"] if secure and secret else
            [f"--metrics-cert-hosts={service},localhost"] if secure else [])
    if cert_args != want:
        problem(f"metrics certificate args are {cert_args}, expected {want}")
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = {m["name"]: m for m in c.get("volumeMounts", [])}
    if not (secure and secret):
        if "metrics-certs" in volumes or "metrics-certs" in mounts:
            problem("a metrics-certs volume is rendered without metrics.certSecret")
        return
    if volumes.get("metrics-certs", {}).get("secret", {}).get("secretName") != secret:
        problem(f"no metrics-certs volume from Secret {secret}: {volumes}")
    m = mounts.get("metrics-certs", {})
    if m.get("mountPath") != CERT_DIR or m.get("readOnly") is not True or m.get("subPath"):
        problem(f"metrics-certs is not mounted read-only at {CERT_DIR} (no subPath): {m}")


def check_metrics_scrape(by_kind, a):
    """The metrics Service's port and the ServiceMonitor's TLS."""
    scheme = "https" if a.metrics_secure == "true" else "http"
    services = [s for s in by_kind.get("Service", [])
                if s["metadata"]["name"].endswith("-metrics")]
    for svc in services:
        ports = svc["spec"]["ports"]
        if [(p["name"], p.get("appProtocol"), p["targetPort"]) for p in ports] != [
                (scheme, scheme, "metrics")]:
            problem(f"the metrics Service's ports are {ports}, want one named {scheme} "
                    f"(appProtocol {scheme}) to the metrics port")
    for sm in by_kind.get("ServiceMonitor", []):
        for e in sm["spec"]["endpoints"]:
            if (e.get("port"), e.get("scheme")) != (scheme, scheme):
                problem(f"the ServiceMonitor scrapes port {e.get('port')} with scheme "
                        f"{e.get('scheme')}, not {scheme}")
            tls = e.get("tlsConfig")
            service = a.metrics_host
            want = (None if scheme == "http" else
                    {"insecureSkipVerify": True} if not a.metrics_cert_secret else
                    {"insecureSkipVerify": False, "serverName": service,
                     "ca": {"secret": {"name": a.metrics_cert_secret, "key": "ca.crt"}}})
            if tls != want:
                problem(f"the ServiceMonitor's tlsConfig is {tls}, expected {want}")


def check_flow_control(by_kind, a):
    """The leader Lease's requests in leader-election, the rest in the operator's own level."""
    levels = by_kind.get("PriorityLevelConfiguration", [])
    schemas = {f["metadata"]["name"]: f for f in by_kind.get("FlowSchema", [])}
    if a.flow_control == "false":
        if levels or schemas:
            problem("flow control is off, yet a FlowSchema or PriorityLevelConfiguration is rendered")
        return
    if len(levels) != 1 or len(schemas) != 2:
        problem(f"expected 1 PriorityLevelConfiguration and 2 FlowSchemas, got {len(levels)} and {len(schemas)}")
        return
    level = levels[0]["metadata"]["name"]
    if levels[0]["spec"].get("type") != "Limited":
        problem(f"PriorityLevelConfiguration {level} is not Limited")
    le = schemas.get(f"{level}-leader-election")
    rest = schemas.get(level)
    if le is None or rest is None:
        problem(f"FlowSchemas are {sorted(schemas)}, not {level} and {level}-leader-election")
        return
    if le["spec"]["priorityLevelConfiguration"]["name"] != "leader-election":
        problem("the leader Lease's FlowSchema does not use the leader-election level")
    if rest["spec"]["priorityLevelConfiguration"]["name"] != level:
        problem(f"the operator's FlowSchema does not use its own level {level}")
    if le["spec"]["matchingPrecedence"] >= rest["spec"]["matchingPrecedence"]:
        problem("the leader Lease's FlowSchema does not match before the operator's other one")
    for f in (le, rest):
        for rule in f["spec"]["rules"]:
            subjects = [(s["kind"], s.get("serviceAccount", {}).get("namespace")) for s in rule["subjects"]]
            if subjects != [("ServiceAccount", a.release_namespace)]:
                problem(f"FlowSchema {f['metadata']['name']} subjects are {subjects}")
    for rule in le["spec"]["rules"]:
        for r in rule.get("resourceRules", []):
            if (r.get("apiGroups") != ["coordination.k8s.io"] or r.get("resources") != ["leases"]
                    or r.get("namespaces") != [a.release_namespace] or r.get("clusterScope")
                    or not set(r.get("verbs", [])) <= {"get", "create", "update"}):
                problem(f"the leader Lease's FlowSchema matches more than the release namespace's Leases: {r}")
        if rule.get("nonResourceRules"):
            problem("the leader Lease's FlowSchema matches non-resource URLs")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("list_json")
    ap.add_argument("--leader-elect", required=True, choices=["true", "false"])
    ap.add_argument("--watch-namespaces", "--watch-namespace", dest="watch_namespaces",
                    default="")
    ap.add_argument("--release-namespace", required=True)
    ap.add_argument("--lease-id", default="heartbeat-operator-leader")
    ap.add_argument("--network-policy", default="true", choices=["true", "false"])
    ap.add_argument("--heartbeat-egress", default="true", choices=["true", "false"])
    ap.add_argument("--metrics-namespace", default="monitoring")
    ap.add_argument("--metrics-auth", default="kubernetes", choices=["kubernetes", "none"])
    ap.add_argument("--metrics-secure", default="true", choices=["true", "false"])
    ap.add_argument("--metrics-cert-secret", default="",
                    help="the kubernetes.io/tls Secret metrics.certSecret names")
    ap.add_argument("--flow-control", default="true", choices=["true", "false"],
                    help="false: the render must hold no FlowSchema (no flowcontrol version given)")
    ap.add_argument("--wakeup-from", default="[]", type=json.loads,
                    help="the NetworkPolicyPeer list networkPolicy.wakeupFrom was given (JSON)")
    a = ap.parse_args()
    watched = []  # de-duplicated, in the order given, as the chart does
    for ns in a.watch_namespaces.split(","):
        if ns and ns not in watched:
            watched.append(ns)
    with open(a.list_json) as f:
        items = json.load(f)["items"]
    by_kind = {}
    for o in items:
        by_kind.setdefault(o["kind"], []).append(o)
    check_edge_rbac(by_kind, a)
    # The metrics Service's DNS name: <fullname>-metrics, fullname the Deployment's name.
    a.metrics_host = next((f"{d['metadata']['name']}-metrics.{a.release_namespace}.svc"
                           for d in by_kind.get("Deployment", [])), "")
    check_metrics_scrape(by_kind, a)
    check_flow_control(by_kind, a)

    # The Deployment.
    deps = by_kind.get("Deployment", [])
    if len(deps) != 1:
        problem(f"expected one Deployment, got {len(deps)}")
    for d in deps:
        pod = d["spec"]["template"]["spec"]
        psc = pod.get("securityContext", {})
        if psc.get("runAsNonRoot") is not True:
            problem("pod securityContext.runAsNonRoot is not true")
        if psc.get("runAsUser") != 65532:
            problem(f"pod securityContext.runAsUser is {psc.get('runAsUser')!r}, not 65532")
        if psc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            problem("pod securityContext.seccompProfile.type is not RuntimeDefault")
        containers = pod["containers"]
        if len(containers) != 1:
            problem(f"expected one container, got {len(containers)}")
        c = containers[0]
        sc = c.get("securityContext", {})
        if sc.get("readOnlyRootFilesystem") is not True:
            problem("container readOnlyRootFilesystem is not true")
        if sc.get("allowPrivilegeEscalation") is not False:
            problem("container allowPrivilegeEscalation is not false")
        if sc.get("capabilities", {}).get("drop") != ["ALL"]:
            problem(f"container capabilities.drop is {sc.get('capabilities')!r}, not [ALL]")
        if sc.get("privileged"):
            problem("container is privileged")
        env = {e["name"]: e for e in c.get("env", [])}
        field = env.get("POD_NAMESPACE", {}).get("valueFrom", {}).get("fieldRef", {})
        if field.get("fieldPath") != "metadata.namespace":
            problem("env POD_NAMESPACE does not come from fieldRef metadata.namespace")
        check_metrics_deployment(c, pod, a)
        ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
        for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            get = c.get(probe, {}).get("httpGet", {})
            if get.get("path") != path or get.get("port") not in ("health", ports.get("health")):
                problem(f"{probe} is not GET {path} on the health port: {get!r}")
        args = c.get("args", [])
        if f"--leader-elect={a.leader_elect}" not in args:
            problem(f"args lack --leader-elect={a.leader_elect}: {args}")
        ns_args = [x for x in args if x.startswith("--namespace=")]
        want = [f"--namespace={','.join(watched)}"] if watched else []
        if ns_args != want:
            problem(f"namespace args are {ns_args}, expected {want}")
        replicas = d["spec"].get("replicas", 1)
        strategy = d["spec"].get("strategy", {}).get("type")
        if a.leader_elect == "false" and strategy != "Recreate":
            problem(f"without leader election the strategy must be Recreate, is {strategy}")
        if a.leader_elect == "false" and replicas > 1:
            problem(f"{replicas} replicas without leader election")

    # RBAC for the managed namespaces.
    for kind in ("ClusterRole", "Role"):
        for o in by_kind.get(kind, []):
            no_wildcards(o)
    cluster_roles = by_kind.get("ClusterRole", [])
    roles = by_kind.get("Role", [])

    # The release namespace's own Roles: the leader Lease's, and the ledger's.
    home_suffixes = ("-leader-election", "-ledger")

    def operator_objects(kind):  # the objects for Agents, not the release namespace's own
        return [o for o in by_kind.get(kind, [])
                if not o["metadata"]["name"].endswith(home_suffixes)]

    # The ledger: ConfigMaps of the release namespace only, never deleted.
    deployments = by_kind.get("Deployment", [])
    home = deployments[0]["metadata"].get("namespace") if deployments else None
    for o in by_kind.get("Role", []):
        if not o["metadata"]["name"].endswith("-ledger"):
            continue
        if home and o["metadata"]["namespace"] != home:
            problem(f"the ledger Role is in {o['metadata']['namespace']}, not the release "
                    f"namespace {home}")
        for rule in o.get("rules", []):
            if rule.get("resources") != ["configmaps"] or "delete" in rule.get("verbs", []):
                problem(f"the ledger Role grants more than reading and writing ConfigMaps: {rule}")

    # [(where, role, bindings)]: the cluster, or each watched namespace.
    grants = []
    if watched:
        if cluster_roles or by_kind.get("ClusterRoleBinding"):
            problem(f"a ClusterRole/ClusterRoleBinding is rendered though namespaces {watched} "
                    "are watched")
        for o in operator_objects("Role") + operator_objects("RoleBinding"):
            if o["metadata"]["namespace"] not in watched:
                problem(f"{o['kind']} {o['metadata']['name']} is in namespace "
                        f"{o['metadata']['namespace']}, which is not watched {watched}")
        for ns in watched:
            main_roles = [r for r in operator_objects("Role") if r["metadata"]["namespace"] == ns]
            bindings = [b for b in operator_objects("RoleBinding")
                        if b["metadata"]["namespace"] == ns]
            if len(main_roles) != 1 or len(bindings) != 1:
                problem(f"namespace {ns}: expected one operator Role and one RoleBinding, got "
                        f"{len(main_roles)} and {len(bindings)}")
            for role in main_roles:
                grants.append((f"namespace {ns}", role, bindings))
        rule_sets = {json.dumps(role["rules"], sort_keys=True) for _, role, _ in grants}
        if len(rule_sets) > 1:
            problem(f"the operator Roles in {watched} do not all have the same rules")
    else:
        bindings = by_kind.get("ClusterRoleBinding", [])
        if len(cluster_roles) != 1 or len(bindings) != 1:
            problem(f"expected one ClusterRole and one ClusterRoleBinding, got "
                    f"{len(cluster_roles)} and {len(bindings)}")
        grants = [("the cluster", role, bindings) for role in cluster_roles]
    for where, role, bindings in grants:
        name = f"{where}: {role['kind']} {role['metadata']['name']}"
        for (group, resource), verbs in EXACT.items():
            held = granted(role["rules"], group, resource)
            if held != verbs:
                problem(f"{name} grants {sorted(held)} on {resource}.{group or 'core'}, "
                        f"not exactly {sorted(verbs)}")
        for (group, resource), verbs in RUNNER_ROLE.items():
            if not verbs <= EXACT[(group, resource)]:
                problem(f"the per-agent Role's {sorted(verbs)} on {resource} is not held")
        for i, r in enumerate(role["rules"]):
            for group in r.get("apiGroups", []):
                for resource in r.get("resources", []):
                    if (group, resource) not in EXACT and not r.get("resourceNames"):
                        problem(f"{name}: rules[{i}] grants {resource}.{group or 'core'}, which "
                                "no audited code path uses (add it to EXACT with its call)")
        for b in bindings:
            ref = (b["roleRef"]["kind"], b["roleRef"]["name"])
            if ref != (role["kind"], role["metadata"]["name"]):
                problem(f"{where}: binding {b['metadata']['name']} refers to {ref}")
            subjects = [(s["kind"], s.get("namespace")) for s in b.get("subjects", [])]
            if subjects != [("ServiceAccount", a.release_namespace)]:
                problem(f"{where}: binding {b['metadata']['name']} subjects are {subjects}")

    # Secrets: never in the operator's own roles; only the wakeup token, by name.
    for where, role, _ in grants:
        for x in role["rules"]:
            if "secrets" in x.get("resources", []) and (
                    x.get("resourceNames") != ["heartbeat-wakeup"] or x.get("verbs") != ["get"]):
                problem(f"{where}: {role['kind']} {role['metadata']['name']} grants {x} on "
                        "Secrets (only get on heartbeat-wakeup, by name, is allowed)")
    for r in roles:
        for x in r["rules"]:
            if "secrets" in x.get("resources", []) and not x.get("resourceNames"):
                problem(f"Role {r['metadata']['name']} grants Secrets without resourceNames")

    operator_labels = {}
    for d in deps:
        operator_labels = d["spec"]["template"]["metadata"].get("labels", {})
        for c in d["spec"]["template"]["spec"]["containers"]:
            OPERATOR_PORTS.update(p["containerPort"] for p in c.get("ports", []))
    check_network_policies(by_kind.get("NetworkPolicy", []), a, watched, operator_labels)

    # The leader Lease.
    if a.leader_elect == "true":
        le = [r for r in roles if r["metadata"]["namespace"] == a.release_namespace
              and r["metadata"]["name"].endswith("-leader-election")]
        if len(le) != 1:
            problem(f"expected one leader-election Role in {a.release_namespace}, got {len(le)}")
        for r in le:
            named = [x for x in r["rules"] if a.lease_id in x.get("resourceNames", [])
                     and "leases" in x.get("resources", [])]
            verbs = set(v for x in named for v in x["verbs"])
            if not {"get", "update"} <= verbs:
                problem(f"leader-election Role lacks get/update on Lease {a.lease_id}")
            if "create" not in granted(r["rules"], "coordination.k8s.io", "leases"):
                problem("leader-election Role lacks create on leases")

    for p in problems:
        print(f"check_render: {a.list_json}: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
