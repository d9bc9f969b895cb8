#!/usr/bin/env bash
# Builds the real stack's two binaries from source through the Go module proxy:
#   .tools/bin/otelcol-otelbridge  the collector distribution of collector-config/builder-config.yaml (ocb)
#   .tools/bin/jaeger              Jaeger v2 (github.com/jaegertracing/jaeger/cmd/jaeger)
# Idempotent: a binary is rebuilt only when it is missing, built from other module versions or
# (the collector) older than its manifest. Go's module and build caches stay where Go keeps them
# (go env GOMODCACHE GOCACHE), so a rebuild with warm caches takes about half a minute and a run
# with nothing to do a fraction of a second. Needs: go (1.26) on PATH and the Go module proxy.
# Says per binary "up to date" or "built NAME in N s (M MiB)" (and the builders' own output).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v go >/dev/null || { echo "build.sh: needs Go 1.26 on PATH (go not found)" >&2; exit 1; }
export GOFLAGS="-buildvcs=false ${GOFLAGS:-}"  # the build is from modules, not this checkout

COLLECTOR_VERSION=0.161.0       # ocb release; every module in builder-config.yaml is at it
JAEGER_VERSION=v2.13.0          # Jaeger release; docker-compose.yml pins the same image tag
JAEGER_MODULE_VERSION=v1.76.0   # its Go module tag
MANIFEST=collector-config/builder-config.yaml
BIN=$PWD/.tools/bin
mkdir -p "$BIN" .tools/build  # ocb creates only the last folder of its output_path

# up_to_date BINARY 'MODULE VERSION' SOURCE... : the binary exists, is newer than every source
# and was built with MODULE at VERSION (read from the binary's own build information).
up_to_date() {
    local binary=$1 want=$2 src
    shift 2
    [[ -x $binary ]] || return 1
    for src in "$@"; do [[ $binary -nt $src ]] || return 1; done
    # grep reads to the end (no -q): an early exit would fail the pipeline (pipefail)
    go version -m "$binary" 2>/dev/null | awk '{print $2" "$3}' | grep -xF "$want" >/dev/null
}

timed() {  # timed NAME COMMAND...: runs it, says how long it took and the binary's size
    local name=$1 start=$SECONDS
    shift
    "$@"
    echo "build.sh: built $name in $((SECONDS - start)) s ($(stat -c %s "$BIN/$name" | awk '{printf "%.0f", $1 / 1048576}') MiB)"
}

build_collector() {
    GOBIN=$BIN go install "go.opentelemetry.io/collector/cmd/builder@v$COLLECTOR_VERSION"
    "$BIN/builder" --config="$MANIFEST"
    install -m 0755 .tools/build/otelcol-otelbridge/otelcol-otelbridge "$BIN/otelcol-otelbridge"
}

build_jaeger() {
    # Jaeger's go.mod has a replace directive, so `go install cmd@version` refuses it: build
    # the command from a module of our own that requires Jaeger at its release and repeats
    # that replace (Jaeger's go.mod at this tag has this one), so the dependency versions are
    # exactly Jaeger's.
    local dir=.tools/build/jaeger
    rm -rf "$dir" && mkdir -p "$dir"
    printf '%s\n' 'module otelbridge.invalid/jaeger-build' '' 'go 1.24' '' \
        'replace github.com/Shopify/sarama => github.com/Shopify/sarama v1.33.0' > "$dir/go.mod"
    (cd "$dir" &&
        { go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$JAEGER_MODULE_VERSION" 2> get.log ||
            { cat get.log >&2; exit 1; }; } &&
        go build -trimpath -o "$BIN/jaeger" \
            -ldflags="-s -w -X github.com/jaegertracing/jaeger/internal/version.latestVersion=$JAEGER_VERSION" \
            github.com/jaegertracing/jaeger/cmd/jaeger)
}

if up_to_date "$BIN/otelcol-otelbridge" "go.opentelemetry.io/collector/otelcol v$COLLECTOR_VERSION" \
        "$MANIFEST"; then
    echo "build.sh: otelcol-otelbridge $COLLECTOR_VERSION is up to date"
else
    timed otelcol-otelbridge build_collector
fi

if up_to_date "$BIN/jaeger" "github.com/jaegertracing/jaeger $JAEGER_MODULE_VERSION"; then
    echo "build.sh: jaeger $JAEGER_VERSION (Go module $JAEGER_MODULE_VERSION) is up to date"
else
    timed jaeger build_jaeger
fi
