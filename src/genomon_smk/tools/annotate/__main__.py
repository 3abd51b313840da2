"""``python -m genomon_smk.tools.annotate ...``"""

import sys

from .cli import main

sys.exit(main())
