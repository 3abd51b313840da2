"""``python -m genomon_smk.tools.mutfilter ...``"""

import sys

from .cli import main

sys.exit(main())
