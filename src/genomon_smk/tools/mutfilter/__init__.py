"""Clean-room rebuild of GenomonMutationFilter (``mutfilter``): realignment, indel,
breakpoint and simplerepeat filters over Genomon anno tables, reading BAMs in-process with pysam.
"""

