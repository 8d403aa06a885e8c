# oci-tofu: the CLI, and `oci-tofu serve` as a container.
#   docker build -t oci-tofu --build-arg VERSION=$(git describe --tags --always) .
#   docker run -p 8443:8443 -v ./tls:/tls:ro \
#     -e OCI_TOFU_PROVIDER_TEMPLATE='ghcr.io/acme/providers/${namespace}/${type}' \
#     -e OCI_TOFU_TLS_CERT=/tls/tls.crt -e OCI_TOFU_TLS_KEY=/tls/tls.key oci-tofu
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/oci-tofu ./cmd/oci-tofu

# distroless/static: CA certificates and a non-root user, nothing else.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/oci-tofu /usr/local/bin/oci-tofu
USER nonroot:nonroot
ENV OCI_TOFU_LISTEN=:8443 \
    OCI_TOFU_LOG_FORMAT=json \
    DOCKER_CONFIG=/home/nonroot/.docker
EXPOSE 8443
ENTRYPOINT ["/usr/local/bin/oci-tofu"]
CMD ["serve"]
