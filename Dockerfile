# syntax=docker/dockerfile:1
# The operator image: a static binary on distroless, running as nonroot.
# Build: `make docker-build IMG=...` (needs a container engine; `make image`
# builds the same image without one, docs/olm.md).
# The chart-backed kinds (Habitat) are reconciled from watches.yaml and the
# charts in helm-charts/.

FROM golang:1.26.8 AS builder
ARG TARGETOS
ARG TARGETARCH
WORKDIR /workspace
ENV GOTOOLCHAIN=local CGO_ENABLED=0

# Dependencies first, so source changes do not invalidate the module cache layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download

COPY cmd/ cmd/
COPY api/ api/
COPY internal/ internal/
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -trimpath -ldflags "-s -w" -o /out/manager ./cmd

FROM gcr.io/distroless/static:nonroot
LABEL org.opencontainers.image.source="https://github.com/kraan-io/kraan-operator" \
      org.opencontainers.image.description="Kraan operator: add-on layers, Helm releases and Habitat services"
# The operator looks for /watches.yaml, whose chart paths (helm-charts/...)
# are relative to the working directory /.
WORKDIR /
COPY --from=builder /out/manager /manager
COPY watches.yaml /watches.yaml
COPY helm-charts/ /helm-charts/
# 65532 is distroless' nonroot user; numeric so runAsNonRoot can verify it.
USER 65532:65532
ENTRYPOINT ["/manager"]
