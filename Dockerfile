# The platform and the simulated worker pool, for docker-compose.yml. The image
# uses the ClickHouse server transport (--clickhouse-dsn), so it needs no libchdb.
# bubblewrap and python3 run code graders in their OS sandbox (suite.code); the
# container needs the right to create namespaces for it (e.g. docker run
# --security-opt seccomp=unconfined, or a profile allowing unshare/clone with
# namespace flags), else code graders are refused and the start log says why.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -o /out/conductor-shadow ./cmd/conductor-shadow && \
    CGO_ENABLED=0 go build -o /out/simllm ./cmd/simllm

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl bubblewrap python3 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ /usr/local/bin/
COPY regression-sets /app/regression-sets
WORKDIR /app
ENTRYPOINT ["conductor-shadow"]
