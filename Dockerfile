# syntax=docker/dockerfile:1
# hfstatic serve in a container, on a static base (no libc: the default build is a static
# binary). docs/platforms.md has the commands:
#   docker build -t hfstatic .
#   docker run --rm -p 8080:8080 hfstatic                      # the embedded stories260K
#   docker run --rm -p 8080:8080 -v "$PWD:/models:ro" hfstatic serve /models/model.hfs --addr 0.0.0.0:8080
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.releaseVersion=${VERSION}" -o /out/hfstatic ./cmd/hfstatic

# distroless/static: CA certificates (for hfstatic pull), /tmp, a non-root user; nothing else.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/hfstatic /usr/local/bin/hfstatic
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/hfstatic"]
CMD ["serve", "--addr", "0.0.0.0:8080"]
