"""``python -m genomon_smk.mutfilter ...``"""

import sys

from .cli import main

sys.exit(main())
