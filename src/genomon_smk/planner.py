"""`python -m genomon_smk.planner`: the cohort planner (genomon_smk.plan.planner), under its public name."""

import sys

from genomon_smk.plan.planner import main

if __name__ == "__main__":
    sys.exit(main())
