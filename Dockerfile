# syntax=docker/dockerfile:1
# Two images from one build, both made from Debian bookworm's packages:
#   docker build --target operator -t heartbeat-operator:0.1.0 .
#   docker build --target runner   -t heartbeat-runner:0.1.0 .
# (the default target, the last stage, is the operator). scripts/images.sh
# does exactly this with podman + runc, making the debian:bookworm base with
# debootstrap when no registry is reachable.
#
# The builder installs the build dependencies with scripts/install-deps.sh and
# compiles with scripts/build.sh, the same scripts CI uses. Each final image is
# FROM scratch and holds one root filesystem that scripts/image-rootfs.sh
# assembled: its binaries, exactly the shared libraries `ldd` says they load,
# CA certificates, tzdata and the users; the runner image adds busybox as the
# POSIX shell the agent's shell tool runs. No package manager, no other files.
# Both run as uid 65532 and write nothing to their root filesystem
# (readOnlyRootFilesystem in the chart and the Jobs).
# tests/integration/helm/dockerfile_test.sh checks this file statically;
# tests/images/images_test.sh builds and runs both images.

FROM debian:bookworm AS builder
WORKDIR /src
COPY scripts/install-deps.sh scripts/
RUN HB_DEPS=build bash scripts/install-deps.sh \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      busybox-static ca-certificates tzdata \
 && rm -rf /var/lib/apt/lists/*
COPY . .
RUN bash scripts/build.sh /build heartbeat-operator heartbeat-runner heartbeat-tools -- \
      -DHB_BUILD_TESTS=OFF -DHB_BUILD_BENCHMARKS=OFF \
 && install -D -s -m 0755 /build/operator/heartbeat-operator /out/heartbeat-operator \
 && install -D -s -m 0755 /build/runner/heartbeat-runner /out/heartbeat-runner \
 && install -D -s -m 0755 /build/runner/heartbeat-tools /out/heartbeat-tools
RUN bash scripts/image-rootfs.sh /rootfs/operator /out/heartbeat-operator \
 && bash scripts/image-rootfs.sh --shell /rootfs/runner /out/heartbeat-runner /out/heartbeat-tools

# The agent loop in every heartbeat Job (the Job runs /usr/local/bin/heartbeat-runner),
# and the tools server its second container runs (/usr/local/bin/heartbeat-tools, as
# uid 65533: the shell tool's `sh -c` runs there, busybox's sh; a custom tools
# image copies this one binary).
FROM scratch AS runner
COPY --from=builder /rootfs/runner/ /
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/heartbeat-runner"]

FROM scratch AS operator
COPY --from=builder /rootfs/operator/ /
USER 65532:65532
# glibc keeps this many freed blocks of each small size per thread (its
# default is 7): a reconcile pass makes and frees thousands of JSON nodes,
# and past the default they go through the arena's locked bins. About 19 %
# less CPU a heartbeat in the capacity bench (docs/benchmarks.md). A
# GLIBC_TUNABLES in the Pod's environment replaces this value.
ENV GLIBC_TUNABLES=glibc.malloc.tcache_count=1024
# metrics, health (/healthz, /readyz), wakeup
EXPOSE 8080 8081 8082
ENTRYPOINT ["/usr/local/bin/heartbeat-operator"]
