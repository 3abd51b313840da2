"""Per-tumor SV summary: how many junctions GenomonSV filt found (``genomonSV.result.txt``) and
``sv_utils filter`` kept (``genomonSV.result.filt.txt``), by Genomon's variant type and by size
class, as a TSV and a plot for the Snakemake report; and the SV tables of the MultiQC report.

``python -m genomon_smk.steps.sv_summary summary --result R.txt --filtered R.filt.txt --tumor NAME
--tsv OUT.tsv --png OUT.png``

The TSV is tidy, one count per row, with the columns

``tumor``         the tumor sample
``stage``         ``unfiltered`` (result.txt) or ``filtered`` (result.filt.txt)
``variant_type``  GenomonSV's ``Variant_Type``: ``deletion``, ``tandem_duplication``,
                  ``inversion`` or ``translocation``
``size_class``    the distance between the two breakpoints: ``<1kb``, ``1-10kb``, ``10-100kb``,
                  ``100kb-1Mb``, ``>=1Mb``, or ``interchromosomal`` (breakpoints on two contigs)
``count``         the number of junctions (rows: an inversion found at both ends is two rows)

Every (stage, variant_type, size_class) combination is written, zero counts included.

``python -m genomon_smk.steps.sv_summary multiqc --summaries S1.tsv ... --parsed NAME=PREFIX ...
--svs OUT_mqc.tsv --parse-counts OUT_mqc.tsv``: MultiQC custom-content tables of each tumor's
filtered junctions by type (from the summaries) and of each parsed sample's junction clusters
and their split reads, improper read-pair clusters and their read pairs (GenomonSV parse's
``.junction.clustered.bedpe.gz`` and ``.improper.clustered.bedpe.gz``).

Deliberate difference from upstream Genomon (docs/differences.md): an output Genomon does not
write.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from collections import Counter
from typing import Iterable

from genomon_smk.steps import exit_status
from genomon_smk.steps.mutation_summary import label_stacked_bars, write_tsv
from genomon_smk.steps.sv_result import read_rows

TSV_COLUMNS = ("tumor", "stage", "variant_type", "size_class", "count")
STAGES = ("unfiltered", "filtered")
VARIANT_TYPES = ("deletion", "tandem_duplication", "inversion", "translocation")
# Upper bounds (exclusive) of the size classes of junctions within one contig.
SIZE_CLASSES = (("<1kb", 1_000), ("1-10kb", 10_000), ("10-100kb", 100_000), ("100kb-1Mb", 1_000_000),
                (">=1Mb", None))
INTERCHROMOSOMAL = "interchromosomal"
SIZE_CLASS_NAMES = tuple(name for name, _ in SIZE_CLASSES) + (INTERCHROMOSOMAL,)
TYPE_COLOURS = {"deletion": "#e6550d", "tandem_duplication": "#3182bd", "inversion": "#31a354",
                "translocation": "#756bb1"}
# GenomonSV parse's clustered records per parsed sample in the MultiQC table: the clusters and the
# reads (junction: split reads; improper: read pairs) that their last column names.
PARSE_KINDS = {"junction": "reads", "improper": "read_pairs"}


def size_class(row: dict[str, str]) -> str:
    """The size class of a junction: its breakpoints' distance, or interchromosomal."""
    if row["Chr_1"] != row["Chr_2"]:
        return INTERCHROMOSOMAL
    distance = abs(int(row["Pos_2"]) - int(row["Pos_1"]))
    return next(name for name, bound in SIZE_CLASSES if bound is None or distance < bound)


def count_junctions(rows: Iterable[dict[str, str]]) -> Counter:
    """(variant type, size class) -> junctions; a type GenomonSV does not write is refused."""
    counts: Counter = Counter()
    for row in rows:
        if row["Variant_Type"] not in VARIANT_TYPES:
            raise ValueError(f"unknown Variant_Type '{row['Variant_Type']}' (GenomonSV's: {', '.join(VARIANT_TYPES)})")
        counts[row["Variant_Type"], size_class(row)] += 1
    return counts


def summary_rows(tumor: str, unfiltered: Counter, filtered: Counter):
    """The TSV rows (tuples in TSV_COLUMNS order), every combination written, zeros included."""
    for stage, counts in zip(STAGES, (unfiltered, filtered)):
        for kind in VARIANT_TYPES:
            for size in SIZE_CLASS_NAMES:
                yield (tumor, stage, kind, size, counts[kind, size])


def by_type(counts: Counter) -> dict[str, int]:
    return {kind: sum(counts[kind, size] for size in SIZE_CLASS_NAMES) for kind in VARIANT_TYPES}


def plot_summary(path: str, tumor: str, unfiltered: Counter, filtered: Counter) -> None:
    """Two panels: junctions by type before/after sv_utils filter; filtered ones by size class."""
    import matplotlib

    matplotlib.use("Agg")  # no display on compute nodes
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    figure, (types_axis, sizes_axis) = plt.subplots(1, 2, figsize=(11, 3.8), layout="constrained")
    figure.suptitle(f"{tumor}: GenomonSV junctions")
    labels = [kind.replace("_", "\n") for kind in VARIANT_TYPES]
    positions = np.arange(len(VARIANT_TYPES))
    for offset, stage, counts, colour in (
        (-0.2, "result.txt", unfiltered, "#bdbdbd"),
        (0.2, "result.filt.txt", filtered, "#636363"),
    ):
        bars = types_axis.bar(positions + offset, list(by_type(counts).values()), width=0.4, label=stage, color=colour)
        types_axis.bar_label(bars, fontsize=8)
    types_axis.set_xticks(positions, labels)
    types_axis.set_ylabel("junctions")
    types_axis.set_title("junctions before and after sv_utils filter")
    types_axis.legend(fontsize=8)

    bottom = np.zeros(len(SIZE_CLASS_NAMES))
    for kind in VARIANT_TYPES:
        heights = np.array([filtered[kind, size] for size in SIZE_CLASS_NAMES])
        if heights.any():
            sizes_axis.bar(SIZE_CLASS_NAMES, heights, bottom=bottom, label=kind, color=TYPE_COLOURS[kind])
            bottom += heights
    sizes_axis.set_xticks(range(len(SIZE_CLASS_NAMES)), [name.replace("inter", "inter-\n") for name in SIZE_CLASS_NAMES])
    label_stacked_bars(sizes_axis, bottom, "breakpoint distance", "filtered junctions", "size classes (result.filt.txt)")
    types_axis.margins(y=0.12)  # room for the bar labels
    for axis in (types_axis, sizes_axis):
        axis.yaxis.set_major_locator(MaxNLocator(integer=True))
    figure.savefig(path, dpi=96)
    plt.close(figure)


def filtered_by_type(summary_tsv: str) -> tuple[str, dict[str, int]]:
    """(tumor, filtered junctions per type) of a summary TSV."""
    totals = dict.fromkeys(VARIANT_TYPES, 0)
    tumor = None
    with open(summary_tsv) as handle:
        header = handle.readline().rstrip("\n").split("\t")
        if tuple(header) != TSV_COLUMNS:
            raise ValueError(f"{summary_tsv}: not an SV summary (columns {', '.join(header)})")
        for line in handle:
            row = dict(zip(TSV_COLUMNS, line.rstrip("\n").split("\t")))
            tumor = row["tumor"]
            if row["stage"] == "filtered":
                totals[row["variant_type"]] += int(row["count"])
    if tumor is None:
        raise ValueError(f"{summary_tsv}: no rows")
    return tumor, totals


def parse_records(prefix: str) -> dict[str, int]:
    """A GenomonSV parse's clusters and the reads or read pairs they hold (the last column lists
    them, `;`-separated), per kind: `junction_clusters`, `junction_reads`, `improper_clusters`,
    `improper_read_pairs`."""
    counts = {}
    for kind, members in PARSE_KINDS.items():
        with gzip.open(f"{prefix}.{kind}.clustered.bedpe.gz", "rt") as handle:
            rows = [line.rstrip("\n").split("\t") for line in handle if line.strip()]
        counts[f"{kind}_clusters"] = len(rows)
        counts[f"{kind}_{members}"] = sum(len(row[-1].split(";")) for row in rows)
    return counts


def mqc_table(path: str, section: dict[str, str], columns: dict[str, str], rows: dict[str, dict]) -> None:
    """A MultiQC custom-content table: its YAML header in comment lines, then Sample + columns."""
    lines = [f"# {key}: '{value}'" for key, value in section.items()]
    lines += ["# plot_type: 'table'", "# pconfig:", f"#     id: '{section['id']}_table'", "# headers:"]
    for column, title in columns.items():
        lines += [f"#     {column}:", f"#         title: '{title}'", "#         format: '{:,.0f}'"]
    lines.append("\t".join(["Sample", *columns]))
    lines += ["\t".join([sample, *(str(values[column]) for column in columns)]) for sample, values in rows.items()]
    with open(path, "w") as out:
        out.write("\n".join(lines) + "\n")


def write_multiqc_tables(summaries: list[str], parsed: dict[str, str], svs_path: str, parse_path: str) -> None:
    svs = dict(filtered_by_type(path) for path in summaries)
    mqc_table(
        svs_path,
        {"id": "genomon_sv", "section_name": "GenomonSV",
         "description": "filtered structural-variant junctions (genomonSV.result.filt.txt) per tumor, by type"},
        {kind: kind.replace("_", " ") for kind in VARIANT_TYPES},
        svs,
    )
    mqc_table(
        parse_path,
        {"id": "genomon_sv_parse", "section_name": "GenomonSV parse",
         "description": "GenomonSV parse per parsed sample: junction clusters and their split reads, "
                        "improper read-pair clusters and their read pairs"},
        {f"{kind}_{unit}": f"{kind} {unit.replace('_', ' ')}" for kind, members in PARSE_KINDS.items()
         for unit in ("clusters", members)},
        {name: parse_records(prefix) for name, prefix in parsed.items()},
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m genomon_smk.steps.sv_summary", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    summary = commands.add_parser("summary", help="a tumor's junction counts (TSV) and plot (PNG)")
    summary.add_argument("--result", required=True, help="genomonSV.result.txt (before sv_utils filter)")
    summary.add_argument("--filtered", required=True, help="genomonSV.result.filt.txt (after sv_utils filter)")
    summary.add_argument("--tumor", required=True)
    summary.add_argument("--tsv", required=True)
    summary.add_argument("--png", required=True)
    multiqc = commands.add_parser("multiqc", help="MultiQC custom-content tables of the SV stage")
    multiqc.add_argument("--summaries", nargs="*", default=[], help="the tumors' summary TSVs")
    multiqc.add_argument("--parsed", nargs="*", default=[], help="NAME=PREFIX of each GenomonSV parse")
    multiqc.add_argument("--svs", required=True, help="output: filtered junctions per tumor (_mqc.tsv)")
    multiqc.add_argument("--parse-counts", required=True, help="output: parse clusters and reads per sample (_mqc.tsv)")
    args = parser.parse_args(argv)

    def run() -> None:
        if args.command == "summary":
            unfiltered = count_junctions(read_rows(args.result))
            filtered = count_junctions(read_rows(args.filtered))
            write_tsv(args.tsv, summary_rows(args.tumor, unfiltered, filtered), TSV_COLUMNS)
            plot_summary(args.png, args.tumor, unfiltered, filtered)
            print(f"{args.tumor}: {sum(unfiltered.values())} SV junctions before sv_utils filter, "
                  f"{sum(filtered.values())} after ({by_type(filtered)})", file=sys.stderr)
        else:
            parsed = dict(item.split("=", 1) for item in args.parsed)
            write_multiqc_tables(args.summaries, parsed, args.svs, args.parse_counts)

    return exit_status("sv_summary", run)

if __name__ == "__main__":
    sys.exit(main())
