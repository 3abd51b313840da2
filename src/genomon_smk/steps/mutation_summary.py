"""Per-pair mutation summary: how many SNVs and indels Genomon called before filtering
(``result.txt``) and kept after ``mutil filter`` (``result.filt.txt``), the six pyrimidine-collapsed
substitution classes of the kept SNVs, and a histogram of the kept calls' tumor allele frequency.

``python -m genomon_smk.steps.mutation_summary --result R.txt --filtered R.filt.txt --tumor NAME
--tsv OUT.tsv --png OUT.png [--bin-width 0.05]``

The TSV is tidy, one count per row, with the columns

``tumor``         the tumor sample
``metric``        ``calls`` (calls per variant type), ``substitution`` (SNVs per class) or
                  ``vaf`` (calls per tumor allele-frequency bin)
``stage``         ``unfiltered`` (result.txt) or ``filtered`` (result.filt.txt); substitution
                  and vaf rows are of the filtered calls
``variant_type``  ``SNV``, ``indel`` or ``other`` (neither: a multi-base substitution)
``category``      ``all`` for calls; the class (``C>A`` ... ``T>G``) for substitutions; the bin
                  ``[low,high)`` for vaf (the last bin is closed, e.g. ``[0.95,1.00]``)
``count``         the number of calls

Every (metric, stage, variant_type, category) combination is written, zero counts included, so
two summaries can be compared row by row. The tumor allele frequency is Genomon's
``misRate_tumor`` column (``misRate`` for a tumor without a matched normal).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import numpy as np

TSV_COLUMNS = ("tumor", "metric", "stage", "variant_type", "category", "count")
STAGES = ("unfiltered", "filtered")
VARIANT_TYPES = ("SNV", "indel", "other")
# The six classes, named by the pyrimidine (C or T) of the base pair, as in mutational signatures.
SUBSTITUTION_CLASSES = ("C>A", "C>G", "C>T", "T>A", "T>C", "T>G")
COMPLEMENT = str.maketrans("ACGT", "TGCA")
# Tumor allele frequency: pair results first, then a tumor-only result's column.
VAF_COLUMNS = ("misRate_tumor", "misRate")
# Colours of the classes as mutational-signature plots draw them.
CLASS_COLOURS = ("#03bcee", "#010101", "#e32926", "#cac9c9", "#a1ce63", "#ebc6c4")


def variant_type(ref: str, alt: str) -> str:
    """SNV, indel (Genomon writes ``-`` for the empty allele) or other."""
    if ref == "-" or alt == "-":
        return "indel"
    if len(ref) == 1 and len(alt) == 1 and ref.upper() in "ACGT" and alt.upper() in "ACGT" and ref != alt:
        return "SNV"
    return "other"


def substitution_class(ref: str, alt: str) -> str:
    """The pyrimidine-collapsed class of an SNV: a purine reference (A, G) is read on the other
    strand, so G>T is C>A and A>G is T>C."""
    ref, alt = ref.upper(), alt.upper()
    if ref in "AG":
        ref, alt = ref.translate(COMPLEMENT), alt.translate(COMPLEMENT)
    return f"{ref}>{alt}"


def read_calls(lines: Iterable[str]) -> Iterator[dict[str, str]]:
    """Rows of a Genomon mutation result as dicts: ``#`` meta lines skipped, the first other line
    is the header. Streams; blank lines are ignored."""
    columns = None
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if columns is None:
            columns = cells
            missing = {"Ref", "Alt"} - set(columns)
            if missing:
                raise ValueError(f"not a Genomon mutation result: no column {', '.join(sorted(missing))}")
            continue
        yield dict(zip(columns, cells))


def tumor_vaf(row: dict[str, str]) -> float | None:
    """The tumor allele frequency of a call, None if the result has no such column or no number."""
    for column in VAF_COLUMNS:
        if column in row:
            try:
                return float(row[column])
            except ValueError:
                return None
    return None


@dataclass
class StageSummary:
    """Counts of one result file."""

    calls: Counter = field(default_factory=Counter)  # variant type -> calls
    classes: Counter = field(default_factory=Counter)  # substitution class -> SNVs
    vafs: dict = field(default_factory=lambda: {kind: [] for kind in VARIANT_TYPES})  # type -> VAFs


def summarise(rows: Iterable[dict[str, str]]) -> StageSummary:
    """Calls per type, SNVs per substitution class, and each call's tumor VAF by type."""
    summary = StageSummary()
    for row in rows:
        kind = variant_type(row["Ref"], row["Alt"])
        summary.calls[kind] += 1
        if kind == "SNV":
            summary.classes[substitution_class(row["Ref"], row["Alt"])] += 1
        vaf = tumor_vaf(row)
        if vaf is not None:
            summary.vafs[kind].append(vaf)
    return summary


def summarise_file(path: str) -> StageSummary:
    with open(path) as handle:
        return summarise(read_calls(handle))


def vaf_bins(bin_width: float) -> np.ndarray:
    """Bin edges from 0 to 1; numpy's last bin is closed, so a VAF of 1.0 is counted."""
    bins = round(1 / bin_width)
    if bins < 1 or not np.isclose(bins * bin_width, 1.0):
        raise ValueError(f"bin width {bin_width} does not divide [0, 1] evenly")
    return np.linspace(0.0, 1.0, bins + 1)


def vaf_histogram(vafs: list[float], edges: np.ndarray) -> np.ndarray:
    """Counts per bin; frequencies outside [0, 1] (none in a valid result) are clipped in."""
    return np.histogram(np.clip(np.asarray(vafs, dtype=float), 0.0, 1.0), bins=edges)[0]


def bin_labels(edges: np.ndarray) -> list[str]:
    """``[low,high)`` per bin; the last bin is closed (``[0.95,1.00]``), as numpy counts it."""
    labels = [f"[{low:.2f},{high:.2f})" for low, high in zip(edges[:-1], edges[1:])]
    labels[-1] = labels[-1][:-1] + "]"
    return labels


def summary_rows(tumor: str, unfiltered: StageSummary, filtered: StageSummary, edges: np.ndarray):
    """The TSV rows (tuples in TSV_COLUMNS order), every combination written, zeros included."""
    for stage, summary in zip(STAGES, (unfiltered, filtered)):
        for kind in VARIANT_TYPES:
            yield (tumor, "calls", stage, kind, "all", summary.calls[kind])
    for name in SUBSTITUTION_CLASSES:
        yield (tumor, "substitution", "filtered", "SNV", name, filtered.classes[name])
    labels = bin_labels(edges)
    for kind in VARIANT_TYPES:
        for label, count in zip(labels, vaf_histogram(filtered.vafs[kind], edges)):
            yield (tumor, "vaf", "filtered", kind, label, int(count))


def write_tsv(path: str, rows, columns=TSV_COLUMNS) -> None:
    """A header line of columns, then the rows, tab-separated."""
    with open(path, "w") as out:
        out.write("\t".join(columns) + "\n")
        for row in rows:
            out.write("\t".join(str(cell) for cell in row) + "\n")


def label_stacked_bars(axis, heights: np.ndarray, xlabel: str, ylabel: str, title: str) -> None:
    """Labels of a panel of stacked bars whose stacks reach `heights`; room above the highest,
    a legend when anything is drawn."""
    axis.set_ylim(0, max(1.0, heights.max()) * 1.12)
    axis.set_xlabel(xlabel)
    axis.set_ylabel(ylabel)
    axis.set_title(title)
    if heights.any():
        axis.legend(fontsize=8)


def plot_summary(path: str, tumor: str, unfiltered: StageSummary, filtered: StageSummary, edges: np.ndarray) -> None:
    """Three panels: calls before/after filtering, substitution classes, tumor VAF histogram."""
    import matplotlib

    matplotlib.use("Agg")  # no display on compute nodes
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    figure, (calls_axis, classes_axis, vaf_axis) = plt.subplots(1, 3, figsize=(11, 3.8), layout="constrained")
    figure.suptitle(f"{tumor}: Genomon mutation calls")

    kinds = [kind for kind in VARIANT_TYPES if kind != "other" or unfiltered.calls[kind] or filtered.calls[kind]]
    positions = np.arange(len(kinds))
    for offset, stage, summary, colour in (
        (-0.2, "result.txt", unfiltered, "#9ecae1"),
        (0.2, "result.filt.txt", filtered, "#3182bd"),
    ):
        counts = [summary.calls[kind] for kind in kinds]
        bars = calls_axis.bar(positions + offset, counts, width=0.4, label=stage, color=colour)
        calls_axis.bar_label(bars, fontsize=8)
    calls_axis.set_xticks(positions, kinds)
    calls_axis.set_ylabel("calls")
    calls_axis.set_title("calls before and after filtering")
    calls_axis.legend(fontsize=8)

    class_counts = [filtered.classes[name] for name in SUBSTITUTION_CLASSES]
    bars = classes_axis.bar(SUBSTITUTION_CLASSES, class_counts, color=CLASS_COLOURS, edgecolor="#444444")
    classes_axis.bar_label(bars, fontsize=8)
    classes_axis.set_ylabel("filtered SNVs")
    classes_axis.set_title("substitution classes (filtered SNVs)")

    bottom = np.zeros(len(edges) - 1)
    for kind, colour in (("SNV", "#3182bd"), ("indel", "#e6550d"), ("other", "#756bb1")):
        counts = vaf_histogram(filtered.vafs[kind], edges)
        if counts.any():
            vaf_axis.bar(edges[:-1], counts, width=np.diff(edges), bottom=bottom, align="edge",
                         label=kind, color=colour, edgecolor="white")
            bottom += counts
    vaf_axis.set_xlim(0, 1)
    label_stacked_bars(vaf_axis, bottom, "tumor allele frequency", "filtered calls", "tumor VAF (filtered calls)")

    for axis in (calls_axis, classes_axis):
        axis.margins(y=0.12)  # room for the bar labels
    for axis in (calls_axis, classes_axis, vaf_axis):
        axis.yaxis.set_major_locator(MaxNLocator(integer=True))
    figure.savefig(path, dpi=96)  # 1056 px wide: fits beside the report's menu
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m genomon_smk.steps.mutation_summary", description=__doc__.split("\n\n")[0])
    parser.add_argument("--result", required=True, help="Genomon result.txt (before mutil filter)")
    parser.add_argument("--filtered", required=True, help="Genomon result.filt.txt (after mutil filter)")
    parser.add_argument("--tumor", required=True, help="tumor sample name, written into the TSV and the plot")
    parser.add_argument("--tsv", required=True, help="output: tidy counts")
    parser.add_argument("--png", required=True, help="output: three-panel plot")
    parser.add_argument("--bin-width", type=float, default=0.05, help="VAF histogram bin width (default 0.05)")
    args = parser.parse_args(argv)

    edges = vaf_bins(args.bin_width)
    unfiltered = summarise_file(args.result)
    filtered = summarise_file(args.filtered)
    write_tsv(args.tsv, summary_rows(args.tumor, unfiltered, filtered, edges))
    plot_summary(args.png, args.tumor, unfiltered, filtered, edges)
    print(
        f"{args.tumor}: {sum(unfiltered.calls.values())} calls before filtering, "
        f"{sum(filtered.calls.values())} after ({filtered.calls['SNV']} SNVs, {filtered.calls['indel']} indels)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
