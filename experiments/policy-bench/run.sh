#!/bin/bash
# The policy bench (see README.md): every policy and variant `parties --list-policies`
# prints, over every scenario in scenarios/, fed by client, sojourn and service p99,
# 3 seeds each, in parties --simulate; prints one leaderboard.
#
#   experiments/policy-bench/run.sh [--out DIR] [--seeds 1,2,3] [--scenarios a,b]
#                                   [--policies 'parties code,util'] [--scale F] [--jobs N]
#
# No root, nothing on the machine is touched. Options are bench.py's (bench.py --help).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x build/parties ] || make -j2 build/parties
exec /usr/bin/python3 experiments/policy-bench/bench.py "$@"
