"""The files of a run in batches (rules/batches.smk): what each pair's marker names."""


def batched_results():
    """Every file of the run that one sample or pair makes and a cohort-level end stage reads: the
    final targets without the end stages' own, and what only the end stages read (the samples'
    samtools and mosdepth tables, GenomonSV's parsed junctions)."""
    end = {
        *POST_ANALYSIS_TARGETS,
        *PMSIGNATURE_TARGETS,
        *PAPLOT_TARGETS,
        *rules.multiqc.output,
        *rules.sv_multiqc_tables.output,
    }
    read_by_end = [
        *expand(rules.bam_stats.output.stats, sample=QC_SAMPLES),
        *expand(rules.bam_stats.output.flagstat, sample=QC_SAMPLES),
        *expand(rules.coverage.output.summary, sample=QC_SAMPLES),
        *expand(rules.coverage.output.dist, sample=QC_SAMPLES),
        *(
            sv_parse_files(name)[kind]
            for name in SV_PARSED
            for kind in ("junction", "improper")
        ),
    ]
    return list(
        dict.fromkeys(
            [path for path in every_final_file() if path not in end] + read_by_end
        )
    )


@functools.cache
def results_by_pair():
    """batched_results by the pair they belong to (the pairs table's tumor of the sample or SV name
    that names the file's directory: bam/<sample>/, mutation/<tumor>/, qc/<sample>/, sv/<name>/),
    and those of no pair (a panel's own samples, samples of no pair) under None. Snakemake's
    --batch slices its rule's input sorted by path: one file per pair keeps a batch's DAG to its
    pairs' jobs, where the files themselves would sort the whole cohort's BAMs into one batch.
    """
    owner = {}
    for pair in [*COHORT.pairs, *SV_PAIRS.values()]:
        for name in (pair.tumor, pair.normal):
            if name:
                owner.setdefault(name, pair.tumor)
    output = Path(OUTPUT_DIR)
    groups = {}
    for path in batched_results():
        parts = Path(path).relative_to(output).parts
        tumor = owner.get(parts[1]) if len(parts) > 2 else None
        groups.setdefault(tumor, []).append(path)
    return groups


BATCH_DIR = f"{OUTPUT_DIR}/.batches"
