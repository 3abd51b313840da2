"""Clean-room gene-based annotation with ANNOVAR's refGene semantics (the five ``*.refGene`` columns).

``Annotator(genes, fasta).annotate(chrom, start, end, ref, alt)`` gives Func.refGene,
Gene.refGene, GeneDetail.refGene, ExonicFunc.refGene and AAChange.refGene for one variant in
Genomon's notation; ``python -m genomon_smk.tools.annotate`` annotates a Genomon mutation TSV.
"""

from .annotator import COLUMNS, Annotator
from .genes import Transcript, builtin_table, read_gene_table, resolve_table

__all__ = ["COLUMNS", "Annotator", "Transcript", "builtin_table", "read_gene_table",
           "resolve_table"]
