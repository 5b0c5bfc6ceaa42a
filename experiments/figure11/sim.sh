#!/bin/bash
# The simulated Figure 11 study at the paper's scale (see README.md, "Simulated"):
# parties --simulate on configs/figure11-sim.ini, fed by client, service and sojourn
# p99, 3 seeds each, for policies parties, util and static; summary tables and plots.
#
#   experiments/figure11/sim.sh [--out DIR] [--seeds 1,2,3] [--scale F] [--jobs N] ...
#
# No root, nothing on the machine is touched. Options are sim.py run's (sim.py --help).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x build/parties ] || make -j2 all
exec /usr/bin/python3 experiments/figure11/sim.py run "$@"
