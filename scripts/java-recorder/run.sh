#!/bin/sh
# Records lowtraffic-1.8.9 (docs/JAVA.md): runs the application built by
# build.sh for SECONDS, and TestRecordJavaTransport against its transport
# API for as long, into DEST: transitions.csv, transport.ndjson.gz and the
# metric log, gzipped.
#
#   scripts/java-recorder/run.sh [BUILD] [DEST] [SECONDS] [SEED] [PORT]
set -eu

BUILD=${1:-/tmp/java-recorder}
DEST=${2:-collector/testdata/java/lowtraffic-1.8.9}
SECONDS_=${3:-420}
SEED=${4:-34}
PORT=${5:-18719}
APP=price-lowtraffic
REPO=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)

mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
java -cp "$BUILD/classes:$BUILD/app" \
	-Dproject.name=$APP -Dcsp.sentinel.api.port=$PORT \
	-Dcsp.sentinel.log.dir="$WORK/logs" \
	LowTraffic "$WORK" $((SECONDS_ + 8)) "$SEED" >"$WORK/app.out" 2>&1 &
JVM=$!
trap 'kill $JVM 2>/dev/null || true' EXIT

# The API opens with the first entry; wait for it.
i=0
until curl -fs "http://127.0.0.1:$PORT/version" >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -gt 100 ]; then
		echo "no transport API on port $PORT" >&2
		cat "$WORK/app.out" >&2
		exit 1
	fi
	sleep 0.1
done
sleep 4

(cd "$REPO" && SENTINEL_TOP_RECORD_JAVA=127.0.0.1:$PORT SENTINEL_TOP_RECORD_OUT="$WORK/transport.ndjson" \
	SENTINEL_TOP_RECORD_SECONDS=$SECONDS_ go test -count=1 -timeout $((SECONDS_ + 120))s \
	-run '^TestRecordJavaTransport$' ./collector/source)
wait $JVM
trap - EXIT

gzip -9n <"$WORK/transport.ndjson" >"$DEST/transport.ndjson.gz"
cp "$WORK/transitions.csv" "$DEST/transitions.csv"
for f in "$WORK/logs/$APP-metrics.log."*; do
	case $f in
	*.idx) ;;
	*) gzip -9n <"$f" >"$DEST/$(basename "$f").gz" ;;
	esac
done
echo "recorded into $DEST (work files in $WORK)"
