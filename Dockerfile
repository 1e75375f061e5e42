# dbagent in a container: `docker build -t dbagent .`, then see docs/operations.md (Deploy).
# Two stages: the build stage installs the locked dependencies and the bot into a virtualenv;
# the runtime stage is the slim Python image, that virtualenv and an unprivileged user.

FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
RUN python -m venv /opt/dbagent
COPY requirements.lock ./
# The lock pins every version; as constraints it installs only what the bot runs (not the
# lock's development tools).
COPY pyproject.toml README.md LICENSE dbagent.example.toml manifest.yml ./
COPY skills ./skills
COPY bot ./bot
RUN /opt/dbagent/bin/pip install --constraint requirements.lock .

FROM python:3.11-slim
ENV PATH=/opt/dbagent/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PORT=3000 \
    DBAGENT_CONFIG=/etc/dbagent/dbagent.toml \
    DBAGENT_STATE_DIR=/var/lib/dbagent \
    DBAGENT_LOG_FORMAT=json
RUN groupadd --system --gid 10001 dbagent \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /var/lib/dbagent dbagent \
    && mkdir -p /var/lib/dbagent /etc/dbagent \
    && chown 10001:10001 /var/lib/dbagent
COPY --from=build /opt/dbagent /opt/dbagent
# The only place the bot writes (the embedded store, or the audit journal beside Redis): a
# volume, so the root filesystem can be read-only (with a tmpfs on /tmp).
VOLUME ["/var/lib/dbagent"]
WORKDIR /var/lib/dbagent
USER 10001:10001
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('PORT', '3000') + '/health', timeout=4)"]
CMD ["dbagent", "serve"]
