"""What a control panel can do, warned about before any job: the highest EBFilter score a panel
gives a site it is clean at, against the `--eb_pval` threshold of `mutil filter`.

EBCall fits a beta-binomial to the panel's reads at the site; with few normals, or shallow
ones, the penalised fit of a clean site stays near its prior, and even a true somatic call of a
deep tumor scores low: with three 20x normals about 1.0, so Genomon's default `--eb_pval 4.0`
(tuned for about ten whole-genome normals) removes every call, silently. Depths are estimated
cheaply (FASTQ: a sample of the first compressed bytes; BAM: its index statistics).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shlex
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import pysam

# The site a warning is about: a clean panel, a tumor at its estimated depth, and this VAF
# (a clonal heterozygous mutation at 50% purity).
TYPICAL_VAF = 0.25
DEFAULT_DEPTH = 30.0
SAMPLE_BYTES = 1 << 16
# The modules a clean site's score comes from (genomon_smk/tools/).
SCORE_CODE = ("ebfilter.py", "betabinom.py")


@dataclass(frozen=True)
class PanelCheck:
    tumor: str
    panel: str
    members: int
    panel_depth: float
    tumor_depth: float
    best_score: float
    threshold: float


def eb_threshold(mutil_params: str) -> float:
    """The --eb_pval of `mutil filter` options (0: the filter does not use EB)."""
    words = shlex.split(mutil_params)
    for index, word in enumerate(words):
        if word == "--eb_pval" and index + 1 < len(words):
            return float(words[index + 1])
        if word.startswith("--eb_pval="):
            return float(word.split("=", 1)[1])
    return 0.0


def fastq_bases(paths: list[str]) -> float:
    """Estimated bases in FASTQ files (gzipped or plain), from their first SAMPLE_BYTES bytes."""
    total = 0.0
    for path in paths:
        with open(path, "rb") as handle:
            head = handle.read(SAMPLE_BYTES)
            size = handle.seek(0, 2)
        if head.startswith(b"\x1f\x8b"):
            text = zlib.decompressobj(wbits=31).decompress(head)
        else:
            text = head
        lines = text.split(b"\n")
        complete = (len(lines) - 1) // 4 * 4
        if not complete or not head:
            continue
        bases = sum(len(line) for line in lines[1:complete:4])
        total += bases * size / len(head)
    return total


def bam_bases(path: str) -> float:
    """Estimated mapped bases of an indexed BAM: mapped reads (index) x mean read length."""
    with pysam.AlignmentFile(path) as bam:
        mapped = sum(stat.mapped for stat in bam.get_index_statistics())
        lengths = [read.query_length for _, read in zip(range(1000), bam.fetch(until_eof=True)) if read.query_length]
    return mapped * (sum(lengths) / len(lengths) if lengths else 0.0)


def best_clean_site_score(members: int, panel_depth: float, tumor_depth: float, vaf: float = TYPICAL_VAF,
                          cache: str | None = None) -> float:
    """The EB score of a site no panel member has a variant read at, for a tumor at its depth and
    the VAF (each strand half the reads): the highest score this panel gives any call there.
    With `cache` (a JSON file), each site's score is computed once per EBFilter code: every
    snakemake start plans again, and the fit (importing scipy) took 0.4 s of each."""
    per_strand = max(1, round(panel_depth / 2))
    tumor_strand = max(1, round(tumor_depth / 2))
    alt = max(1, round(tumor_strand * vaf))
    tumor, controls = [tumor_strand, alt, tumor_strand, alt], [[per_strand, 0, per_strand, 0]] * members
    if cache is None:
        return clean_site_score(tumor, controls)
    key = f"{members} {per_strand} {tumor_strand} {alt}"
    code = score_code_digest()
    scores = read_score_cache(cache, code)
    if key not in scores:
        scores[key] = clean_site_score(tumor, controls)
        write_score_cache(cache, code, scores)
    return scores[key]


def clean_site_score(tumor: list[int], controls: list[list[int]]) -> float:
    # Imported here: EBFilter brings scipy (about a second), and every Snakemake job process
    # imports this module with the workflow, though only the main process checks panels.
    from genomon_smk.tools.ebfilter import score_counts

    return float(score_counts(tumor, controls))


def score_code_digest() -> str:
    """A digest of the code that scores (EBFilter and its beta-binomial fit): a cached score is
    reused only by the code that made it."""
    tools = Path(__file__).resolve().parent.parent / "tools"
    digest = hashlib.sha256()
    for name in SCORE_CODE:
        digest.update((tools / name).read_bytes())
    return digest.hexdigest()[:16]


def read_score_cache(path: str, code: str) -> dict[str, float]:
    """The cached scores of this code (none for a missing, unreadable or other code's file)."""
    try:
        with open(path) as handle:
            cached = json.load(handle)
    except (OSError, ValueError):
        return {}
    if not isinstance(cached, dict) or cached.get("code") != code or not isinstance(cached.get("scores"), dict):
        return {}
    return {str(key): float(value) for key, value in cached["scores"].items()}


def write_score_cache(path: str, code: str, scores: dict[str, float]) -> None:
    """Replace the cache at once (a concurrent plan reads the old file or the new one); a cache
    that cannot be written is only a cost."""
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(path) or ".", delete=False,
                                         prefix=".panel-scores.") as handle:
            json.dump({"code": code, "scores": scores}, handle)
        os.replace(handle.name, path)
    except OSError:
        pass


def reachable_eb_pval(best_score: float) -> float | None:
    """The largest --eb_pval (one decimal) that a clean site's best score still passes, or None
    when even 0.1 is out of reach (the panel is too small or shallow for any)."""
    value = math.floor(best_score * 10 - 1e-9) / 10
    return value if value >= 0.1 else None


def warning(check: PanelCheck, params_key: str, fix: str | None = None) -> str | None:
    """The plan's warning for a pair whose panel cannot reach the threshold, or None; fix: the
    line to write for the largest reachable --eb_pval (reachable_eb_pval), when there is one."""
    if check.best_score >= check.threshold:
        return None
    remedy = (
        f"The largest --eb_pval this panel passes is {reachable_eb_pval(check.best_score):g}: {fix}; "
        "or use a larger or deeper panel"
        if fix and reachable_eb_pval(check.best_score) is not None
        else "Use a larger or deeper panel, or a lower --eb_pval"
    )
    return (
        f"warning: pair {check.tumor}: panel '{check.panel}' ({check.members} member(s), ~{check.panel_depth:.0f}x) "
        f"gives a clean site of a ~{check.tumor_depth:.0f}x tumor at VAF {TYPICAL_VAF} an EB score of at most "
        f"{score_below(check.best_score, check.threshold)}, below --eb_pval {check.threshold:g} ({params_key}): "
        f"mutil filter would remove every call at that VAF or lower (calls of higher VAF score higher). "
        f"{remedy} (config/README.md, 'Small panels')."
    )


def score_below(score: float, threshold: float) -> str:
    """The score with the decimals that show it below the threshold (0.997 under 1, not "1.00")."""
    for digits in (2, 3, 4):
        text = f"{score:.{digits}f}"
        if float(text) < threshold:
            return text
    return f"{score:.6g}"


def own_sample_warning(tumor: str, normal: str | None, panel: str, members: list[str]) -> str | None:
    """A panel that holds the pair's own normal scores the pair's true calls down (one that holds
    its tumor is refused with the sheets: samplesheet.panel_tumor_problems)."""
    if normal is None or normal not in members:
        return None
    return (
        f"warning: pair {tumor}: panel '{panel}' holds the pair's own normal {normal}: its reads of the "
        "pair's mutations make them look like panel noise, and EBFilter removes them"
    )
