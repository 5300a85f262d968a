# syntax=docker/dockerfile:1
# Two images from one build, both Debian bookworm like the rest of the project:
#   docker build --target operator -t heartbeat-operator:0.1.0 .
#   docker build --target runner   -t heartbeat-runner:0.1.0 .
# (the default target, the last stage, is the operator). The builder installs
# the build dependencies with scripts/install-deps.sh and compiles with
# scripts/build.sh, the same scripts CI uses. The final images hold only the
# runtime libraries and their binaries, run as uid 65532, and write nothing to
# their root filesystem (readOnlyRootFilesystem in the chart and the Jobs).
# tests/integration/helm/dockerfile_test.sh checks this file statically.

FROM debian:bookworm AS builder
WORKDIR /src
COPY scripts/install-deps.sh scripts/
RUN HB_DEPS=build bash scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
COPY . .
RUN bash scripts/build.sh /build heartbeat-operator heartbeat-runner heartbeat-tools -- \
      -DHB_BUILD_TESTS=OFF -DHB_BUILD_BENCHMARKS=OFF \
 && install -D -s -m 0755 /build/operator/heartbeat-operator /out/heartbeat-operator \
 && install -D -s -m 0755 /build/runner/heartbeat-runner /out/heartbeat-runner \
 && install -D -s -m 0755 /build/runner/heartbeat-tools /out/heartbeat-tools

# Shared by both images: the libraries both binaries link (ldd), CA
# certificates (TLS to the API server and model providers), the non-root user.
FROM debian:bookworm-slim AS runtime
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates libcpprest2.10 libyaml-cpp0.7 libspdlog1.10 libfmt9 libssl3 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 nonroot \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin nonroot

# The agent loop in every heartbeat Job (the Job runs /usr/local/bin/heartbeat-runner),
# and the tools server its second container runs (/usr/local/bin/heartbeat-tools, as
# uid 65533: the shell tool's `sh -c` runs there, which the slim base has; a custom
# tools image copies this one binary). SQLite: archival memory.
FROM runtime AS runner
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libsqlite3-0 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=builder /out/heartbeat-runner /usr/local/bin/heartbeat-runner
COPY --from=builder /out/heartbeat-tools /usr/local/bin/heartbeat-tools
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/heartbeat-runner"]

FROM runtime AS operator
COPY --from=builder /out/heartbeat-operator /usr/local/bin/heartbeat-operator
USER 65532:65532
# metrics, health (/healthz, /readyz), wakeup
EXPOSE 8080 8081 8082
ENTRYPOINT ["/usr/local/bin/heartbeat-operator"]
