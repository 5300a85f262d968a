#!/usr/bin/env bash
# The Dockerfile, checked statically in a second (tests/images/images_test.sh
# builds and runs the images for real, in the normal pass only):
#  - stages builder, runner, operator; builder FROM debian:bookworm, the final
#    stages FROM scratch holding only the root filesystem the builder
#    assembled with scripts/image-rootfs.sh; the operator is the default;
#  - the builder installs with `HB_DEPS=build scripts/install-deps.sh` and
#    compiles with scripts/build.sh (the script CI uses), which exist;
#  - runner and operator run as uid 65532 with ENTRYPOINT the binary, at the
#    paths the operator's Jobs call (controllers/pod/job_builder.h, api/heartbeat_pod.h);
#  - .dockerignore keeps build trees and .git out of the context.
set -euo pipefail
src="${HB_SOURCE_DIR:?run under ctest}"
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

for stage in builder runner operator; do
  [ "$(q "'$stage' in s")" = True ] || fail "the Dockerfile has no stage '$stage'"
done
[ "$(q "s['builder']['from']")" = "debian:bookworm" ] || fail "builder is not FROM debian:bookworm"
for stage in runner operator; do
  [ "$(q "s['$stage']['from']")" = scratch ] || fail "$stage is not FROM scratch"
  [ "$(q "s['$stage']['copy'] == ['--from=builder /rootfs/$stage/ /']")" = True ] ||
    fail "$stage does not copy exactly the builder's /rootfs/$stage/"
  [ "$(q "s['$stage']['run']")" = "[]" ] || fail "$stage has RUN steps (a scratch stage has no shell)"
done
# The last stage is the default target: the operator.
[ "$(q "json.loads(sys.argv[1])[-1]['name']")" = operator ] || fail "the last (default) stage is not operator"

builder_runs="$(q "' ;; '.join(s['builder']['run'])")"
echo "$builder_runs" | grep -Eq 'HB_DEPS=build bash scripts/install-deps\.sh' ||
  fail "builder does not run 'HB_DEPS=build bash scripts/install-deps.sh'"
echo "$builder_runs" | grep -Eq 'bash scripts/build\.sh ' ||
  fail "builder does not build with scripts/build.sh (the build script CI shares)"
echo "$builder_runs" | grep -Eq 'scripts/image-rootfs\.sh /rootfs/operator /out/heartbeat-operator' ||
  fail "builder does not assemble /rootfs/operator with scripts/image-rootfs.sh"
echo "$builder_runs" | grep -Eq 'scripts/image-rootfs\.sh --shell /rootfs/runner /out/heartbeat-runner /out/heartbeat-tools' ||
  fail "builder does not assemble /rootfs/runner (with a shell, both runner binaries)"
for script in install-deps.sh build.sh image-rootfs.sh images.sh; do
  [ -f "$src/scripts/$script" ] || fail "scripts/$script does not exist"
done
grep -q 'HB_DEPS' "$src/scripts/install-deps.sh" || fail "scripts/install-deps.sh does not know HB_DEPS"

# What the operator's Jobs run and the chart deploys (the image-rootfs script
# puts every binary in /usr/local/bin).
runner_path="$(grep -o 'runner_command = {"[^"]*"' "$src/controllers/pod/job_builder.h" | sed 's/.*{"//; s/"$//')"
[ "$runner_path" = /usr/local/bin/heartbeat-runner ] ||
  fail "controllers/pod/job_builder.h runs '$runner_path', not /usr/local/bin/heartbeat-runner"
grep -q 'kToolsServerPath = "/usr/local/bin/heartbeat-tools"' "$src/api/heartbeat_pod.h" ||
  fail "api/heartbeat_pod.h no longer names /usr/local/bin/heartbeat-tools"
[ "$(q "s['runner']['entrypoint']")" = "$runner_path" ] ||
  fail "runner ENTRYPOINT is not $runner_path (what the operator's Jobs run)"
[ "$(q "s['operator']['entrypoint']")" = /usr/local/bin/heartbeat-operator ] ||
  fail "operator ENTRYPOINT is not /usr/local/bin/heartbeat-operator"
for stage in runner operator; do
  user="$(q "s['$stage']['user']")"
  [ "${user%%:*}" = 65532 ] || fail "$stage does not run as USER 65532 (has '$user')"
done
grep -q '^nonroot:x:65532:65532:' "$src/scripts/image-rootfs.sh" ||
  fail "scripts/image-rootfs.sh does not name the uid 65532 user"

ignore="$src/.dockerignore"
[ -f "$ignore" ] || fail "no .dockerignore"
{ grep -qx 'build\*' "$ignore" && grep -qx '\.git' "$ignore"; } || fail ".dockerignore does not exclude build* and .git"
echo "dockerfile test: passed"
