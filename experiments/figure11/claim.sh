#!/bin/bash
# The Figure 11 claim mapped in simulation (see README.md, "The claim mapped"): PARTIES
# fed by client, ebee sojourn and ebee service p99 on points that sweep, one at a time,
# the link's utilisation at hotel's peak, its propagation delay, hotel's peak against its
# saturation and the client feed's reporting lag; 3 seeds per point; summary, CSV, plot.
#
#   experiments/figure11/claim.sh [--out DIR] [--work DIR] [--points base,link=95,...]
#                                 [--seeds 1,2,3] [--scale F] [--jobs N] [--keep-logs]
#
# No root, nothing on the machine is touched. Options are claim.py run's (claim.py --help).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x build/parties ] || make -j2 build/parties
exec /usr/bin/python3 experiments/figure11/claim.py run "$@"
