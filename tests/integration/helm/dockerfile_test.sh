#!/usr/bin/env bash
# The Dockerfile, checked statically (this machine has no container engine):
#  - stages builder, runtime, runner, operator; builder FROM debian:bookworm,
#    final stages on debian:bookworm-slim;
#  - the builder installs with `HB_DEPS=build scripts/install-deps.sh` and
#    compiles with scripts/build.sh (the script CI uses), which exist;
#  - runner and operator run as uid 65532 with ENTRYPOINT the binary, and the
#    runner's path is the one the operator's Jobs call (controllers/job_builder.h);
#  - every package the runtime stages apt-get install exists in Debian
#    (`apt-cache show`), and covers, with its dependencies, every shared
#    library the built binaries link (ldd + dpkg -S), when they are built;
#  - .dockerignore keeps build trees and .git out of the context.
set -euo pipefail
src="${HB_SOURCE_DIR:?run under ctest}"
build="${HB_BUILD_DIR:-$src/build}"
dockerfile="$src/Dockerfile"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -f "$dockerfile" ] || fail "no Dockerfile at the repository root"
command -v python3 >/dev/null || fail "python3 is needed to parse the Dockerfile"

# Stage name -> "FROM-image|packages|user|entrypoint|runs", one line per stage.
parse() {
  python3 - "$dockerfile" <<'PY'
import json, re, shlex, sys
text = open(sys.argv[1]).read()
text = re.sub(r"\\\n", " ", text)          # join continuation lines
stages, cur = [], None
for raw in text.splitlines():
    line = raw.strip()
    if not line or line.startswith("#"):
        continue
    word, _, rest = line.partition(" ")
    word = word.upper()
    if word == "FROM":
        m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?", rest, re.I)
        cur = {"name": m.group(2) or "", "from": m.group(1), "packages": [], "user": "",
               "entrypoint": "", "run": [], "copy": []}
        stages.append(cur)
    elif cur is None:
        continue
    elif word == "RUN":
        cur["run"].append(rest)
        for cmd in re.split(r"&&|;|\|\|", rest):
            toks = shlex.split(cmd)
            toks = [t for t in toks if not re.match(r"^[A-Z_]+=", t)]
            if len(toks) >= 2 and toks[0] in ("apt-get", "apt") and toks[1] == "install":
                cur["packages"] += [t for t in toks[2:] if not t.startswith("-")]
    elif word == "USER":
        cur["user"] = rest.strip()
    elif word == "ENTRYPOINT":
        cur["entrypoint"] = " ".join(json.loads(rest)) if rest.startswith("[") else rest
    elif word == "COPY":
        cur["copy"].append(rest)
json.dump(stages, sys.stdout)
PY
}
stages_json="$(parse)"
q() { python3 -c "import json,sys; s={x['name']: x for x in json.loads(sys.argv[1])}; print(eval(sys.argv[2]))" "$stages_json" "$1"; }

for stage in builder runtime runner operator; do
  [ "$(q "'$stage' in s")" = True ] || fail "the Dockerfile has no stage '$stage'"
done
[ "$(q "s['builder']['from']")" = "debian:bookworm" ] || fail "builder is not FROM debian:bookworm"
[ "$(q "s['runtime']['from']")" = "debian:bookworm-slim" ] || fail "runtime is not FROM debian:bookworm-slim"
for stage in runner operator; do
  [ "$(q "s['$stage']['from']")" = runtime ] || fail "$stage is not FROM the runtime stage"
done
# The last stage is the default target: the operator.
[ "$(q "json.loads(sys.argv[1])[-1]['name']")" = operator ] || fail "the last (default) stage is not operator"

builder_runs="$(q "' ;; '.join(s['builder']['run'])")"
echo "$builder_runs" | grep -Eq 'HB_DEPS=build bash scripts/install-deps\.sh' ||
  fail "builder does not run 'HB_DEPS=build bash scripts/install-deps.sh'"
echo "$builder_runs" | grep -Eq 'bash scripts/build\.sh ' ||
  fail "builder does not build with scripts/build.sh (the build script CI shares)"
for script in install-deps.sh build.sh; do
  [ -f "$src/scripts/$script" ] || fail "scripts/$script does not exist"
done
grep -q 'HB_DEPS' "$src/scripts/install-deps.sh" || fail "scripts/install-deps.sh does not know HB_DEPS"

runner_path="$(grep -o 'runner_command = {"[^"]*"' "$src/controllers/job_builder.h" | sed 's/.*{"//; s/"$//')"
[ -n "$runner_path" ] || fail "no runner_command in controllers/job_builder.h"
[ "$(q "s['runner']['entrypoint']")" = "$runner_path" ] ||
  fail "runner ENTRYPOINT is not $runner_path (what the operator's Jobs run)"
[ "$(q "s['operator']['entrypoint']")" = /usr/local/bin/heartbeat-operator ] ||
  fail "operator ENTRYPOINT is not /usr/local/bin/heartbeat-operator"
for stage in runner operator; do
  user="$(q "s['$stage']['user']")"
  [ "${user%%:*}" = 65532 ] || fail "$stage does not run as USER 65532 (has '$user')"
done
{ grep -q 'groupadd --gid 65532' "$dockerfile" && grep -q 'useradd --uid 65532' "$dockerfile"; } ||
  fail "the runtime stage does not create the uid/gid 65532 user"

# apt lists are needed for apt-cache; a machine that never ran apt-get update has none.
if ! apt-cache show libc6 >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || fail "apt-cache knows no packages (run apt-get update)"
  apt-get update -qq
fi
grep -q 'VERSION_CODENAME=bookworm' /etc/os-release ||
  echo "note: this machine is not Debian bookworm; package names are checked against its apt sources"
stage_packages() {  # the runtime packages of a final stage (its own + the runtime stage's)
  q "' '.join(s['runtime']['packages'] + s['$1']['packages'])"
}
for stage in runner operator; do
  pkgs="$(stage_packages "$stage")"
  [ -n "$pkgs" ] || fail "$stage installs no runtime packages"
  for p in $pkgs; do
    apt-cache show "$p" >/dev/null 2>&1 || fail "$stage installs '$p', which apt does not know"
  done
  echo "ok: $stage packages exist in apt: $pkgs"
done

# The libraries the binaries really link, against what the stages install.
# The dependency closure is walked from dpkg's status database (packages
# installed here, where the binaries were linked) and apt's lists only for
# packages not installed, first alternative of each dependency, as apt would.
dependency_closure() {  # dependency_closure PACKAGE... -> one package per line
  python3 - "$@" <<'PY2'
import re, subprocess, sys
def depends_of(pkg):
    q = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Status}\n${Pre-Depends}, ${Depends}", pkg],
                       capture_output=True, text=True)
    if q.returncode == 0 and q.stdout.startswith("installed\n"):
        return q.stdout.split("\n", 1)[1]
    a = subprocess.run(["apt-cache", "show", "--no-all-versions", pkg], capture_output=True, text=True)
    if a.returncode != 0:
        return ""  # virtual package: nothing to walk
    fields = re.findall(r"^(?:Pre-)?Depends: (.*)$", a.stdout, re.M)
    return ", ".join(fields)
seen, todo = set(), list(sys.argv[1:])
while todo:
    pkg = todo.pop()
    if pkg in seen:
        continue
    seen.add(pkg)
    for dep in depends_of(pkg).split(","):
        first = dep.split("|")[0].strip()
        name = re.sub(r"\s*\(.*\)", "", first).split(":")[0].strip()
        if name and name not in seen:
            todo.append(name)
print("\n".join(sorted(seen)))
PY2
}
check_links() {  # check_links STAGE BINARY
  local stage=$1 bin=$2 closure missing=() p
  if [ ! -x "$bin" ]; then echo "skip: $bin not built, library coverage of $stage unchecked"; return; fi
  # shellcheck disable=SC2046
  closure=" $(dependency_closure $(stage_packages "$stage") | tr '\n' ' ') "
  while read -r lib; do
    p="$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null || true)"
    p="${p%%:*}"
    [ -n "$p" ] || fail "$bin links $lib, which no Debian package owns"
    [[ "$closure" == *" $p "* ]] || missing+=("$p ($lib)")
  done < <(ldd "$bin" | awk '$3 ~ /^\// {print $3}')
  [ ${#missing[@]} -eq 0 ] ||
    fail "$stage image lacks packages for libraries $bin links: ${missing[*]} (its packages bring:$closure)"
  echo "ok: every library $bin links comes with the $stage stage's packages"
}
check_links operator "$build/operator/heartbeat-operator"
check_links runner "$build/runner/heartbeat-runner"
check_links runner "$build/runner/heartbeat-tools"
# The tools server is where the operator's Jobs run it (api/heartbeat_pod.h).
grep -q 'kToolsServerPath = "/usr/local/bin/heartbeat-tools"' "$src/api/heartbeat_pod.h" ||
  fail "api/heartbeat_pod.h no longer names /usr/local/bin/heartbeat-tools"
grep -q 'COPY --from=builder /out/heartbeat-tools /usr/local/bin/heartbeat-tools' "$dockerfile" ||
  fail "the runner image does not install heartbeat-tools at /usr/local/bin/heartbeat-tools"

ignore="$src/.dockerignore"
[ -f "$ignore" ] || fail "no .dockerignore"
{ grep -qx 'build\*' "$ignore" && grep -qx '\.git' "$ignore"; } || fail ".dockerignore does not exclude build* and .git"
echo "dockerfile test: passed"
