"""`python -m genomon_smk.mutation_summary`: the mutation summary (genomon_smk.steps.mutation_summary), under its public name."""

import sys

from genomon_smk.steps.mutation_summary import main

if __name__ == "__main__":
    sys.exit(main())
