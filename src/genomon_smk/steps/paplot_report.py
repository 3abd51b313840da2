"""The inputs of the paplot report: its config, made from Genomon's DNA template that paplot
ships (genomon_v2_5_0_dna_merge.cfg) with this project's column names mapped in, the genome's
chromosome sizes from the reference's .fai, and the mutation table paplot draws.

``python -m genomon_smk.steps.paplot_report --template T --fai F --out-dir D [--mutation F ...]``
writes D/paplot.cfg, D/genome.csv and (with --mutation) D/mutation.txt.

Deliberate differences from upstream Genomon (docs/differences.md), in the template's values:

- QC: merge_qc.txt holds this project's QC (coverage table, samtools stats; see
  genomon_smk.steps.post_analysis): its columns are mapped to the template's names; the coverage
  chart stacks the depths the coverage table has (no 2x ratio).
- CA: the chromosomes are the reference's (Genomon's 1..22, X, Y when it has them, else all its
  contigs), with their sizes from its .fai (the template's default is hg19's).
- Mutation: the template groups by ANNOVAR's Merge_Func and Gene.refGene (the gene annotation
  stage's columns, as Genomon's with ANNOVAR). Without those columns (no genes known for the
  reference, or annotation.enable: false; Genomon then draws no matrix) rows are grouped by their
  variant class (SNV, insertion, deletion, MNV), a column added to the table paplot reads, and
  drawn per chromosome.
"""

from __future__ import annotations

import argparse
import configparser
import os
import sys

from genomon_smk.steps.post_analysis import ID, MERGE_FUNC, merge_tables, read_top

TEMPLATE = "genomon_v2_5_0_dna_merge.cfg"
GENE = "Gene.refGene"
CLASS = "variant_class"
GENOMON_CHROMOSOMES = [str(number) for number in range(1, 23)] + ["X", "Y"]
# merge_qc.txt's columns under the template's names (col_opt_<name>).
QC_COLUMNS = {
    "duplicate_reads": "duplicate_reads",
    "mapped_reads": "mapped_reads",
    "total_reads": "total_reads",
    "average_depth": "mean_depth",
    "mean_insert_size": "mean_insert_size",
    "ratio_10x": "fraction_ge_10x",
    "ratio_20x": "fraction_ge_20x",
    "ratio_30x": "fraction_ge_30x",
    "read_length_r1": "read_length_r1",
    "read_length_r2": "read_length_r2",
    "id": ID,
}
CLASS_COLOURS = "SNV:#00ADA6,insertion:#E60011,deletion:#F39600,MNV:#9CAEB7"


def template_path(prefix: str = sys.prefix) -> str:
    """Genomon's DNA template as paplot installs it (data files under the environment's prefix)."""
    import paplot

    path = os.path.join(prefix, f"paplot-data-{paplot.__version__}", "config_template", TEMPLATE)
    if not os.path.exists(path):
        raise FileNotFoundError(f"paplot's template {path} not found: run bin/install")
    return path


def fai_contigs(lines) -> list[tuple[str, int]]:
    """(name, length) of a .fai's contigs."""
    return [(fields[0], int(fields[1])) for fields in (line.split("\t") for line in lines if line.strip())]


def short_name(contig: str) -> str:
    """A contig's name as paplot compares them: lower case, without `chr`."""
    name = contig.lower()
    return name[3:] if name.startswith("chr") else name


def chosen_contigs(contigs: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Genomon's chromosomes (1..22, X, Y) among the contigs, in that order; all contigs when
    none is one of them."""
    by_name = {short_name(name): (name, length) for name, length in contigs}
    genomon = [by_name[name.lower()] for name in GENOMON_CHROMOSOMES if name.lower() in by_name]
    return genomon or contigs


def variant_class(ref: str, alt: str) -> str:
    """SNV, insertion (Ref `-`), deletion (Alt `-`) or MNV (several bases replaced)."""
    if ref == "-":
        return "insertion"
    if alt == "-":
        return "deletion"
    return "SNV" if len(ref) == 1 and len(alt) == 1 else "MNV"


def annotated(header: list[str]) -> bool:
    """Whether a mutation table has the columns Genomon's template draws (ANNOVAR's)."""
    return MERGE_FUNC in header and GENE in header


def write_mutation_table(inputs: list[str], out_path: str) -> bool:
    """The merged mutation tables as one, with a variant_class column unless they are annotated;
    whether they are."""
    merged = out_path + ".merged"
    merge_tables([(os.path.basename(path), path) for path in inputs], merged)
    with open(merged) as handle:
        header = read_top(handle).header
    if annotated(header):
        os.replace(merged, out_path)
        return True
    ref, alt = header.index("Ref"), header.index("Alt")
    with open(merged) as source, open(out_path, "w") as out:
        in_rows = False
        for line in source:
            text = line.rstrip("\n")
            if text.startswith("#") and not in_rows:
                out.write(line)
                continue
            fields = text.split("\t")
            out.write("\t".join([*fields, CLASS if not in_rows else variant_class(fields[ref], fields[alt])]) + "\n")
            in_rows = True
    os.remove(merged)
    return False


def paplot_config(template, genome_path: str, contigs: list[str], annotated_mutations: bool) -> configparser.RawConfigParser:
    """Genomon's template (an open file) with this project's mappings."""
    config = configparser.RawConfigParser()
    config.optionxform = str  # paplot's keys are lower case already; keep values' case
    config.read_file(template)
    config.set("genome", "path", genome_path)
    config.set("ca", "use_chrs", ",".join(contigs))
    qc = "result_format_qc"
    for option in [option for option in config.options(qc) if option.startswith("col_opt_")]:
        config.remove_option(qc, option)
    for name, column in QC_COLUMNS.items():
        config.set(qc, f"col_opt_{name}", column)
    chart = "qc_chart_1"
    for option in ("stack4", "tooltip_format5"):
        config.remove_option(chart, option)
    config.set(chart, "name_set", "Ratio 30x:#2478B4, Ratio 20x:#FF7F0E, Ratio 10x:#2CA02C")
    config.set(chart, "tooltip_format2", "Ratio 10x: {ratio_10x:.2}")
    config.set(chart, "tooltip_format3", "Ratio 20x: {ratio_20x:.2}")
    config.set(chart, "tooltip_format4", "Ratio 30x: {ratio_30x:.2}")
    if not annotated_mutations:
        mutation, columns = "mutation", "result_format_mutation"
        config.set(columns, "col_group", CLASS)
        config.set(columns, "col_gene", "Chr")
        config.set(mutation, "group_color", CLASS_COLOURS)
        config.set(mutation, "tooltip_format_checker_title1", "Sample ID:{id}, Chromosome:{gene}, {#sum_item_value}")
        config.set(mutation, "tooltip_format_gene_title", "Chromosome:{gene}, {#sum_item_value}")
    return config


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m genomon_smk.steps.paplot_report", description=__doc__.split("\n\n")[0])
    parser.add_argument("--template", help="Genomon's template (default: paplot's installed one)")
    parser.add_argument("--fai", required=True, help="the reference's .fai")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--mutation", nargs="*", default=[], help="merged mutation tables to draw")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    try:
        with open(args.fai) as handle:
            contigs = chosen_contigs(fai_contigs(handle))
        genome = os.path.join(args.out_dir, "genome.csv")
        with open(genome, "w") as out:
            out.writelines(f"{name},{length}\n" for name, length in contigs)
        annotated_mutations = (
            write_mutation_table(args.mutation, os.path.join(args.out_dir, "mutation.txt")) if args.mutation else True
        )
        with open(args.template or template_path()) as template:
            config = paplot_config(template, genome, [name for name, _ in contigs], annotated_mutations)
        with open(os.path.join(args.out_dir, "paplot.cfg"), "w") as out:
            config.write(out)
    except (ValueError, OSError, configparser.Error) as error:
        print(f"genomon_smk.steps.paplot_report: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
