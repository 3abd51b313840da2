"""VCF mode (``-O vcf``) of the mutfilter subcommands.

The filters compute the same columns as in anno mode; here they are written into the VCF
record instead of appended to a TSV row: INFO keys for per-site values, FORMAT keys for
per-sample values (spec §3: realignment INFO ``FPR`` or ``B1R/BMR/B9R`` and FORMAT
``NNR/NAR/NOR``; indel FORMAT ``NI/RI`` on the tumor column; breakpoint FORMAT ``NB/LB``;
simplerepeat INFO flag ``SR``). ``---`` values become ``.``; missing INFO values are left out.

Records are converted to anno coordinates the way Genomon's VCFs encode alleles
(left-anchored indels): ``A>AGT`` is the insertion ``Start=End=POS, Ref=-, Alt=GT``;
``ATG>A`` the deletion ``Start=POS+1, End=POS+2, Ref=TG, Alt=-``; anything else spans
``POS .. POS+len(REF)-1``. Only the first ALT allele is used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from genomon_smk.fileio import open_text

from .table import NA, Annotator, Candidate, annotate_rows


@dataclass(frozen=True)
class VcfField:
    """One INFO or FORMAT key filled from new column ``column``."""

    id: str
    column: int
    number: str
    type: str
    description: str


@dataclass(frozen=True)
class VcfLayout:
    """Where a subcommand's columns go in a VCF record.

    ``tumor_format`` and ``normal_format`` list FORMAT keys per sample; keys of the normal
    that the tumor lacks (or vice versa) are written as ``.``.
    """

    info: tuple[VcfField, ...] = ()
    tumor_format: tuple[VcfField, ...] = ()
    normal_format: tuple[VcfField, ...] = ()

    def header_lines(self) -> list[str]:
        """``##INFO``/``##FORMAT`` definitions of every key this layout writes."""
        lines = [f'##INFO=<ID={f.id},Number={f.number},Type={f.type},'
                 f'Description="{f.description}">' for f in self.info]
        seen = set()
        for f in self.tumor_format + self.normal_format:
            if f.id not in seen:
                seen.add(f.id)
                lines.append(f'##FORMAT=<ID={f.id},Number={f.number},Type={f.type},'
                             f'Description="{f.description}">')
        return lines

    def all_format_ids(self) -> tuple[str, ...]:
        ids: list[str] = []
        for f in self.tumor_format + self.normal_format:
            if f.id not in ids:
                ids.append(f.id)
        return tuple(ids)


def vcf_candidate(line: str) -> Candidate:
    """Parse a VCF data line into a :class:`Candidate` in anno coordinates."""
    fields = line.split("\t", 5)
    if len(fields) < 5:
        raise ValueError(f"VCF record needs at least 5 columns: {line!r}")
    chrom, pos, ref, alt = fields[0], int(fields[1]), fields[3].upper(), fields[4].split(",")[0]
    alt = alt.upper()
    if len(ref) == 1 and len(alt) > 1 and alt[0] == ref:
        return Candidate(line, chrom, pos - 1, pos, "-", alt[1:])
    if len(alt) == 1 and len(ref) > 1 and ref[0] == alt:
        return Candidate(line, chrom, pos, pos + len(ref) - 1, ref[1:], "-")
    return Candidate(line, chrom, pos - 1, pos + len(ref) - 1, ref, alt)


def _value(columns: Sequence[str], index: int) -> str:
    value = columns[index]
    return "." if value == NA else value


class VcfRecordWriter:
    """Adds a layout's INFO/FORMAT values to VCF data lines."""

    def __init__(self, layout: VcfLayout, samples: Sequence[str], tumor: str | None,
                 normal: str | None):
        self.layout = layout
        self.format_ids = layout.all_format_ids()
        self.tumor_index = self._sample_index(samples, tumor, 0)
        self.normal_index = self._sample_index(samples, normal, 1)

    @staticmethod
    def _sample_index(samples: Sequence[str], name: str | None, default: int) -> int | None:
        """Column of the named sample (``-A``/``-B``), else the default position if present."""
        if name is not None:
            if name not in samples:
                raise ValueError(f"sample {name!r} is not in the VCF header ({', '.join(samples)})")
            return samples.index(name)
        return default if default < len(samples) else None

    def record(self, line: str, columns: Sequence[str]) -> str:
        """Return ``line`` with the layout's INFO and FORMAT values added."""
        fields = line.split("\t")
        info = [] if fields[7] in (".", "") else [fields[7]]
        for f in self.layout.info:
            value = columns[f.column]
            if f.type == "Flag":
                if value != NA:
                    info.append(f.id)
            elif value != NA:
                info.append(f"{f.id}={value}")
        fields[7] = ";".join(info) or "."
        if len(fields) > 9 and self.format_ids:
            fields[8] = ":".join([fields[8], *self.format_ids])
            per_sample = {self.tumor_index: self.layout.tumor_format,
                          self.normal_index: self.layout.normal_format}
            for offset in range(len(fields) - 9):
                given = {f.id: _value(columns, f.column) for f in per_sample.get(offset, ())}
                extra = [given.get(key, ".") for key in self.format_ids]
                fields[9 + offset] = ":".join([fields[9 + offset], *extra])
        return "\t".join(fields)


def annotate_vcf(input_path: str, output_path: str, layout: VcfLayout,
                 annotator_factory: Callable[[], Annotator], tumor_name: str | None = None,
                 normal_name: str | None = None, threads: int = 1) -> None:
    """Stream a VCF through a subcommand's annotator (rows it drops are left out)."""
    with open_text(input_path) as source, open(output_path, "w") as sink:
        lines = (raw.rstrip("\r\n") for raw in source)
        samples: list[str] = []
        for line in lines:
            if line.startswith("#CHROM"):
                for definition in layout.header_lines():
                    sink.write(definition + "\n")
                sink.write(line + "\n")
                samples = line.split("\t")[9:]
                break
            sink.write(line + "\n")
        writer = VcfRecordWriter(layout, samples, tumor_name, normal_name)
        data = (line for line in lines if line and not line.startswith("#"))
        for line, columns in annotate_rows(data, annotator_factory, parser=vcf_candidate,
                                           threads=threads):
            if columns is not None:
                sink.write(writer.record(line, columns) + "\n")
