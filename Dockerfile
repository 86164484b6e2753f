# searchsync as a container image: the wheel from `make dist`, in its own virtualenv, run by a
# non-root user, `searchsync` as the entrypoint. Build with `make image` (deploy/image/build.sh),
# or by hand after `make dist`:
#
#   docker build -t searchsync:0.1.0 .                   # FROM python:3.11-slim
#   docker build --build-arg EXTRAS=opensearch -t ...    # with searchsync[opensearch]
#   docker build --build-arg BASE_IMAGE=localhost/searchsync-base:bookworm -t ...
#
# Any base with python3 (3.11+) and its venv module works: deploy/image/build.sh makes one from
# a debootstrap root file system when no registry can be reached.
#
# Probes: `searchsync run` serves /livez (liveness: the event loop answers) and /healthz
# (readiness: owns partitions and makes progress) on the metrics port, 9464 by default
# (deploy/README.md, "Probes"). One-off commands (`index load`, `tombstones purge`, ...) serve no
# probes; the HEALTHCHECK below only matters for Docker's own status.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

# the [extra]s to install with the wheel, comma-separated: "" or "opensearch"
ARG EXTRAS=""

ENV PATH=/opt/searchsync/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    SEARCHSYNC_OBSERVABILITY_METRICS_HOST=0.0.0.0

COPY dist/searchsync-*.whl /tmp/wheels/
# Behind a TLS-inspecting proxy, pass its CA bundle as a build secret (never stored in a layer):
#   --secret id=pip_cert,src=/etc/ssl/certs/ca-certificates.crt   (deploy/image/build.sh does)
RUN --mount=type=secret,id=pip_cert \
    if [ -s /run/secrets/pip_cert ]; then export PIP_CERT=/run/secrets/pip_cert; fi \
    && python3 -m venv /opt/searchsync \
    && set -- /tmp/wheels/searchsync-*.whl \
    && /opt/searchsync/bin/pip install --no-cache-dir --disable-pip-version-check \
        "$1${EXTRAS:+[$EXTRAS]}" \
    && rm -rf /tmp/wheels \
    && groupadd --gid 10001 searchsync \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin --no-log-init searchsync

# the uid the Kubernetes manifests name (runAsUser: 10001)
USER 10001:10001
WORKDIR /tmp
EXPOSE 9464

HEALTHCHECK --interval=20s --timeout=10s --start-period=30s --retries=3 \
    CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('SEARCHSYNC_OBSERVABILITY_METRICS_PORT', '9464') + '/livez', timeout=5)"]

ENTRYPOINT ["searchsync"]
CMD ["run"]
