#!/usr/bin/env bash
# Runs each Argo CD health script on every case of cases.json and checks the
# status it returns. An argument names another cases file (the operator
# integration test passes objects it read from the control plane).
#
# Argo CD runs the scripts in gopher-lua, a Lua 5.1, with only its base,
# table, package and a safe os library open (no string library, so no
# s:sub()) and every JSON number a float. The cases run under the same
# limits: with lua5.1 (the same language: no goto, //, bitwise operators or
# integers), and with lua5.4 too, numbers passed as floats either way.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
scripts="$here/../../../helm/heartbeat-operator/argocd/heartbeat.dev"
interpreters=()
for lua in lua5.1 lua5.4; do
  command -v "$lua" >/dev/null && interpreters+=("$(command -v "$lua")")
done
[ ${#interpreters[@]} -gt 0 ] || { echo "lua5.1 is missing: run scripts/install-deps.sh" >&2; exit 1; }
command -v lua5.1 >/dev/null || echo "warning: lua5.1 (Argo CD's language) is missing; lua5.4 only" >&2
for lua in "${interpreters[@]}"; do
echo "== $lua"
python3 - "${1:-$here/cases.json}" "$scripts" "$lua" <<'PY'
import json, subprocess, sys

def lua(value):
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(float(value))  # gopher-lua's numbers are all float64
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # its escapes (\n, \", \\) are Lua's too
    if isinstance(value, list):
        return "{" + ",".join(lua(v) for v in value) + "}"
    return "{" + ",".join("[%s]=%s" % (json.dumps(k), lua(v)) for k, v in value.items()) + "}"

# Argo CD's libraries only (the harness keeps print for itself).
SANDBOX = """local print, os_time, os_date = print, os.time, os.date
getmetatable("").__index = nil
string, io, math, coroutine, debug, utf8 = nil
os = {time = os_time, date = os_date}
"""
STATUSES = {"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}

cases_file, scripts, interpreter = sys.argv[1:]
failed = 0
cases = json.load(open(cases_file))
prelude = open("%s/../conditions.lua" % scripts).read()  # in front of each, as Argo CD gets them
for case in cases:
    script = prelude + open("%s/%s/health.lua" % (scripts, case["kind"])).read()
    program = SANDBOX + "obj = %s\nlocal hs = (function()\n%s\nend)()\nprint(hs.status)\nprint(hs.message)\n" % (
        lua(case["object"]), script)
    run = subprocess.run([interpreter, "-"], input=program, capture_output=True, text=True)
    lines = run.stdout.split("\n")
    status = lines[0] if run.returncode == 0 else "error: " + run.stderr.strip()
    message = lines[1] if len(lines) > 1 else ""
    ok = status in STATUSES and status == case["want"] and case.get("message_has", "") in message
    print("%s %s: %s (%s)%s" % ("ok  " if ok else "FAIL", case["kind"], case["name"], status,
                                "" if ok else " want %s, message %r" % (case["want"], message)))
    failed += not ok
print("%d of %d cases failed" % (failed, len(cases)))
sys.exit(1 if failed else 0)
PY
done
