"""`python -m genomon_smk.timeline`: the utilisation timeline (genomon_smk.steps.timeline), under its public name."""

import sys

from genomon_smk.steps.timeline import main

if __name__ == "__main__":
    sys.exit(main())
