# syntax=docker/dockerfile:1
# otelbridge as a small container image: usable as the sidecar / tee container, and as the
# `otelbridge-demo` service of docker-compose.yml. Multi-stage: the build stage installs with
# exactly the install command of README.md ("Try it"; tests/test_deploy.py checks they are
# equal), the runtime stage gets only the finished virtual environment and runs as a non-root
# user. The base image tag is pinned: bump it with the others listed in docs/deploy.md.
#
#   docker build -t otelbridge:0.1.0 .
#   some-agent-cli ... --output-format stream-json | docker run -i --rm otelbridge:0.1.0 --exporter console

ARG PYTHON_IMAGE=python:3.11.15-slim

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /opt/otelbridge
COPY pyproject.toml README.md ./
COPY otelbridge ./otelbridge
RUN python3 -m venv .venv && .venv/bin/pip install -q .

FROM ${PYTHON_IMAGE} AS runtime
# A virtual environment is not relocatable: it keeps the build stage's absolute path.
COPY --from=build /opt/otelbridge/.venv /opt/otelbridge/.venv
COPY examples /opt/otelbridge/examples
RUN groupadd --system --gid 10001 otelbridge \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent otelbridge
ENV PATH=/opt/otelbridge/.venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    OTEL_SERVICE_NAME=otelbridge
USER 10001:10001
WORKDIR /opt/otelbridge
ENTRYPOINT ["otelbridge"]
