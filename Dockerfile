# An alternative to `make image` for machines with Docker but no Go toolchain.
# `make image` (tools/image) is the supported, tested and reproducible way to
# build the proxy's image, without a container engine; see docs/proxy.md,
# "Container image". Nothing builds this file in CI (no container engine
# runs there): it gives the same user (65532), paths, command and
# environment on distroless's base, with distroless's CA bundle.
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

# distroless/static: CA certificates and the non-root user 65532, nothing else.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/oci-tofu /usr/local/bin/oci-tofu
USER 65532:65532
WORKDIR /home/nonroot
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    HOME=/home/nonroot \
    OCI_TOFU_LOG_FORMAT=json
EXPOSE 8443
ENTRYPOINT ["/usr/local/bin/oci-tofu"]
CMD ["serve"]
