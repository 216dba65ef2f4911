# The code-executor appliance: FROM scratch over a root filesystem assembled by
# scripts/image/assemble-rootfs (release binary, the shared libraries it and Deno load, the
# verified Deno and Pyodide runtimes, tini, a minimal /etc with user 1001). Nothing is pulled.
# No shell, no package manager, no setuid file.
#
# Build with `scripts/build-image` (it assembles target/image/ and runs
# `docker build --network none -f Dockerfile target/image`).
FROM scratch

COPY rootfs/ /
COPY --chown=1001:1001 owned/ /

ENV PATH=/usr/local/bin:/usr/bin \
    HOME=/home/executor \
    CODE_EXECUTOR_RUNTIME_DIR=/opt/code-executor/runtimes \
    CODE_EXECUTOR_CACHE_DIR=/opt/code-executor/cache \
    CODE_EXECUTOR_PROJECT_DIR=/home/executor

# The Pyodide memory snapshot holds absolute paths of the Pyodide files, so it is made here,
# at the image's own paths, by the server itself (exec form: there is no shell). The runtimes
# are already installed and verified; nothing is downloaded (the build has no network).
RUN ["/usr/local/bin/code-executor", "fetch-runtimes"]

# The settings file on the config volume, written on the first start (`serve --init-config`).
# Workers run only under Landlock's kernel-enforced filesystem view (the seccomp profile lets
# the server apply it): without it the appliance runs no code rather than less confined code.
ENV CODE_EXECUTOR_CONFIG=/config/config.toml \
    CODE_EXECUTOR_REQUIRE_LANDLOCK=true

USER 1001:1001
WORKDIR /home/executor
# 8765: MCP over streamable HTTP (/mcp). 9464: operations (/livez, /readyz, /metrics).
EXPOSE 8765 9464
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/code-executor"]
CMD ["serve", "--http", "0.0.0.0:8765", "--init-config"]
HEALTHCHECK --interval=10s --timeout=6s --start-period=60s --retries=3 \
  CMD ["/usr/local/bin/code-executor", "healthcheck"]
