"""The storage plan: which tier each rule's files use, how much each tier must hold at its peak,
and a refusal before anything runs when a tier's declared capacity is too small.

Sizes are estimated from the gzipped FASTQ inputs with the ratios of the Fugaku Genomon paper
(one 100 bp WGS pair: FASTQ 272 / 360 GiB, SAM 363 / 473 GiB, markdup BAM 95 / 124 GiB for
normal / tumor), so the plan is an estimate, meant to catch a tier that is clearly too small.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from genomon_smk.plan.rules import FACTS, CohortShape

# Bytes of each kind of file per byte of gzipped FASTQ input (pigz/gzip level 1-6: ~3.5x).
FASTQ_PER_GZ = 3.5
SAM_PER_FASTQ = 1.33  # paper: SAM 363 GiB from 272 GiB of FASTQ
BAM_PER_FASTQ = 0.35  # paper: markdup BAM 95 GiB from 272 GiB of FASTQ
PIECE_PER_BAM = 1.34  # sorted region pieces, compressed at level 1 by samtools (bench preset: 139 / 104 MB)
SORT_TEMP_PER_BAM = 1.0  # sort temporaries about the size of their input
# A map job's bamsort files and sorted chunk (uncompressed): at most 1.13 x the chunk's SAM
# (a bench chunk sorted with blockmb=16, so that bamsort spilled as on a WGS chunk).
SORTED_CHUNK_PER_SAM = 1.15
MERGED_PER_BAM = 4.3  # bammarkduplicates' uncompressed copy of its merged input (bench preset: 443 / 104 MB)
# GenomonSV parse's sort files: 1.5% of the tumor's BAM on the .test data (junction and improper
# reads only); filt's annotation tables (annot_utils' hg19 genes and exons) 48 MiB, whatever the BAM.
SV_PARSE_TEMP_PER_BAM = 0.02
SV_FILT_TEMP_BYTES = 64 << 20

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}


def parse_size(text: str | int) -> int:
    """Bytes of `123`, `500M`, `1.5G`, `2T` (binary units; a trailing B or iB is allowed)."""
    if isinstance(text, int):
        return text
    match = re.fullmatch(r"\s*([0-9.]+)\s*([KMGTP]?)(?:i?B)?\s*", str(text), flags=re.I)
    if not match:
        raise ValueError(f"not a size: {text!r} (use e.g. 500M, 20G, 2T)")
    return int(float(match.group(1)) * UNITS[match.group(2).upper()])


def human(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.1f} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1024
    raise AssertionError


@dataclass(frozen=True)
class Use:
    """Bytes a rule's files of one role put on a tier; per_job uses are alive once per running job."""

    rule: str
    role: str
    tier: str
    size: float
    per_job: bool = False


def jobs_per_sample(rule: str, shape: CohortShape) -> float:
    """A mapped sample's jobs of a rule (the rule table's count for the cohort, per sample)."""
    return FACTS[rule].jobs(shape) / shape.samples


def sample_uses(fastq_gz_bytes: int, shape: CohortShape, tiers: dict, bam_made: bool = False) -> list[Use]:
    """The estimated uses of one mapped sample's files, by rule and role, on the tiers the config
    gives; a job's temporaries are the sample's share of its rule's jobs. bam_made: its final BAM
    is there, and the run makes none of its split, map and markdup files again."""
    fastq = fastq_gz_bytes * FASTQ_PER_GZ
    bam = fastq * BAM_PER_FASTQ
    final = Use("merge_bam", "output", tiers["merge_bam"]["output"], bam)
    if bam_made:
        return [final]
    map_temp = fastq * SAM_PER_FASTQ * SORTED_CHUNK_PER_SAM / jobs_per_sample("map_reads", shape)
    return [
        Use("split_fastq", "output", tiers["split_fastq"]["output"], fastq),
        Use("map", "temp", tiers["map"]["temp"], map_temp, per_job=True),
        Use("map", "output", tiers["map"]["output"], bam * PIECE_PER_BAM),
        Use("markdup", "temp", tiers["markdup"]["temp"], bam * MERGED_PER_BAM / jobs_per_sample("markdup", shape),
            per_job=True),
        Use("markdup", "output", tiers["markdup"]["output"], bam),
        final,
    ]


def conversion_uses(bam_bytes: int, tiers: dict) -> list[Use]:
    """The estimated uses of bam_to_fastq (Genomon's [bam_tofastq]) for a sample's BAMs: the
    FASTQ they hold (a BAM's bytes stand for as many of gzipped FASTQ) at gzip level 1, about
    half the uncompressed size, and collate's temporaries (at most all the BAMs' size)."""
    return [
        Use("bam_to_fastq", "output", tiers["bam_to_fastq"]["output"], bam_bytes * FASTQ_PER_GZ / 2),
        Use("bam_to_fastq", "temp", tiers["bam_to_fastq"]["temp"], bam_bytes * SORT_TEMP_PER_BAM, per_job=True),
    ]


def setup_uses(to_build: dict[str, float]) -> list[Use]:
    """The files the set-up rules still have to build ({rule: bytes}), in resources_dir: on the
    global file system, counted with the global tier."""
    return [Use(rule, "output", "global", size) for rule, size in to_build.items()]


def sv_uses(parsed_bam_bytes: list[int], shape: CohortShape, tiers: dict) -> list[Use]:
    """The estimated temporaries of the SV stage: GenomonSV parse's per parsed BAM, filt's per job."""
    uses = [Use("sv_parse", "temp", tiers["sv_parse"]["temp"], size * SV_PARSE_TEMP_PER_BAM, per_job=True)
            for size in parsed_bam_bytes]
    return uses + [Use("sv_filt", "temp", tiers["sv_filt"]["temp"], SV_FILT_TEMP_BYTES, per_job=True)] * FACTS["sv_filt"].jobs(shape)


def peaks(uses: list[Use], reference_bytes: int) -> dict[str, float]:
    """Peak bytes per tier: every sample's files alive at once (an upper bound), the largest
    per-job temporary for node_local, and the reference copy for cache."""
    peak = {"node_local": 0.0, "shared_tmp": 0.0, "cache": float(reference_bytes), "global": 0.0}
    for use in uses:
        if use.per_job:
            peak[use.tier] = max(peak[use.tier], use.size) if use.tier == "node_local" else peak[use.tier] + use.size
        else:
            peak[use.tier] += use.size
    return peak


def over_capacity(peak: dict[str, float], capacity: dict[str, int | None]) -> list[str]:
    return [
        f"storage tier {tier}: the plan needs about {human(peak[tier])} but its capacity is {human(limit)} "
        f"(config storage.capacity.{tier}); use fewer samples per run, more chunks/regions, or another tier"
        for tier, limit in capacity.items()
        if limit is not None and peak.get(tier, 0) > limit
    ]


def plan_table(uses: list[Use], peak: dict[str, float], capacity: dict[str, int | None], places: dict[str, str]) -> str:
    """The plan as text: per rule and role the tier and the estimate, then per tier the peak."""
    totals: dict[tuple[str, str, str], float] = {}
    for use in uses:
        key = (use.rule, use.role, use.tier)
        totals[key] = max(totals.get(key, 0.0), use.size) if use.per_job else totals.get(key, 0.0) + use.size
    lines = ["Storage plan (estimated from the FASTQ sizes):", f"  {'rule':<24}{'files':<8}{'tier':<12}{'bytes':>12}"]
    for (rule, role, tier), size in totals.items():
        lines.append(f"  {rule:<24}{role:<8}{tier:<12}{human(size):>12}{'  per job' if role == 'temp' else ''}")
    lines.append(f"  {'tier':<12}{'peak':>12}{'capacity':>12}  place")
    for tier in ("node_local", "shared_tmp", "cache", "global"):
        limit = capacity.get(tier)
        lines.append(
            f"  {tier:<12}{human(peak[tier]):>12}{(human(limit) if limit is not None else '-'):>12}  {places[tier]}"
        )
    return "\n".join(lines)


def file_bytes(paths: list[str]) -> int:
    return sum(os.path.getsize(p) for p in paths if os.path.exists(p))
