#!/bin/sh
# Builds Java Sentinel 1.8.9 from its sources, with fastjson 1.2.83, and the
# recording application beside this script, into OUT (default
# /tmp/java-recorder). No Maven: javac only (JDK 17).
#
#   scripts/java-recorder/build.sh SENTINEL_SRC FASTJSON_SRC [OUT]
#
# SENTINEL_SRC is alibaba/Sentinel at tag 1.8.9 (commit
# d75a6687b82711f8611ef91f6a56e993d24f57c5), FASTJSON_SRC alibaba/fastjson at
# tag 1.2.83, both extracted trees (e.g. `git archive 1.8.9 | tar -x -C DIR`).
# The trees are copied; nothing of them is changed in place.
set -eu

if [ $# -lt 2 ]; then
	echo "usage: $0 SENTINEL_SRC FASTJSON_SRC [OUT]" >&2
	exit 2
fi
SENTINEL=$1
FASTJSON=$2
OUT=${3:-/tmp/java-recorder}
HERE=$(cd "$(dirname "$0")" && pwd)

rm -rf "$OUT"
mkdir -p "$OUT/src/fastjson" "$OUT/src/sentinel" "$OUT/classes" "$OUT/app"

# fastjson less its optional codecs (Guava, Joda, Moneta, Springfox) and its
# framework integrations: the references to the codecs are made to
# MiscCodec, reached only for classes absent here.
cp -R "$FASTJSON/src/main/java/." "$OUT/src/fastjson/"
FJ=$OUT/src/fastjson/com/alibaba/fastjson
rm -rf "$FJ/support/jaxrs" "$FJ/support/moneta" "$FJ/support/retrofit" \
	"$FJ/support/spring" "$FJ/support/springfox" "$FJ/support/hsf" "$FJ/support/geo" \
	"$FJ/serializer/GuavaCodec.java" "$FJ/serializer/JodaCodec.java"
for f in "$FJ/parser/ParserConfig.java" "$FJ/serializer/SerializeConfig.java"; do
	sed -i -e '/^import com\.alibaba\.fastjson\.support\.\(moneta\|springfox\)\./d' \
		-e 's/\(JodaCodec\|GuavaCodec\|MonetaCodec\|SwaggerJsonSerializer\)\.instance/MiscCodec.instance/g' "$f"
done

# Sentinel: core, transport common and simple HTTP, datasource extension.
MODULES="sentinel-core sentinel-transport/sentinel-transport-common
sentinel-transport/sentinel-transport-simple-http
sentinel-extension/sentinel-datasource-extension"
for m in $MODULES; do
	cp -R "$SENTINEL/$m/src/main/java/." "$OUT/src/sentinel/"
	if [ -d "$SENTINEL/$m/src/main/resources/META-INF/services" ]; then
		mkdir -p "$OUT/classes/META-INF/services"
		for s in "$SENTINEL/$m/src/main/resources/META-INF/services/"*; do
			cat "$s" >>"$OUT/classes/META-INF/services/$(basename "$s")"
			echo >>"$OUT/classes/META-INF/services/$(basename "$s")"
		done
	fi
done
# The one change to Sentinel: the command API binds to the loopback address,
# so it is reachable from this machine only.
SH=$OUT/src/sentinel/com/alibaba/csp/sentinel/transport/command/SimpleHttpCommandCenter.java
grep -q 'new ServerSocket(basePort + tryCount / 3, 100)' "$SH"
sed -i 's/new ServerSocket(basePort + tryCount \/ 3, 100)/new ServerSocket(basePort + tryCount \/ 3, 100, java.net.InetAddress.getLoopbackAddress())/' "$SH"

find "$OUT/src" -name '*.java' >"$OUT/sources.list"
javac -nowarn -encoding UTF-8 -proc:none -d "$OUT/classes" @"$OUT/sources.list" 2>"$OUT/javac.log" || {
	grep error "$OUT/javac.log" >&2
	exit 1
}
javac -encoding UTF-8 -cp "$OUT/classes" -d "$OUT/app" "$HERE"/*.java
echo "built $OUT (run: $HERE/run.sh)"
