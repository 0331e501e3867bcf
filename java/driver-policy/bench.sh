#!/bin/sh
# The per-request cost of the Java driver's load-balancing policies (PlanBench, JMH):
#   java/driver-policy/bench.sh [OUT.json] [--shards=N,...] [POLICY ...]
# OUT.json defaults to target/jmh-plan.json; the policies to `default` (the driver's
# DefaultLoadBalancingPolicy) and every client policy registered in replica-lb-core (a name
# not registered yet is skipped, saying so). Needs java/core installed in ~/.m2
# (mvn -B -f java/core/pom.xml install). --shards=1,2 measures the adapter with those shard
# counts (default: its own, one per core). Run it on a quiet machine: it takes about
# 20 s per policy and thread count.
set -eu
cd "$(dirname "$0")"
out=${1:-target/jmh-plan.json}
[ $# -gt 0 ] && shift
mvn -B -ntp -q test-compile dependency:build-classpath \
    -Dmdep.outputFile=target/bench.classpath -Dmdep.includeScope=test
exec java -cp "target/test-classes:target/classes:$(cat target/bench.classpath)" \
    io.replicalb.driver.bench.BenchMain "$out" "$@"
