"""Merge mutation: per pair, the region results under Genomon's meta lines and header
(`result.txt`; with gene annotation `calls.txt`, which rules/annotation.smk turns into result.txt); in a job of its own, so that retuning it reruns nothing else, the final filter
(`mutil filter` -> `result.filt.txt`) and bgzipped, indexed VCFs of the filtered and of all
calls; then a summary of both (call counts, substitution classes, tumor VAF) as a TSV and a plot
for the Snakemake report."""

MUTATION_SUMMARY_PREFIX = (
    f"{OUTPUT_DIR}/mutation/{{tumor}}/{{tumor}}.genomon_mutation.summary"
)


# The merge's own file: result.txt, or with gene annotation the calls that the annotation turns
# into result.txt (kept: changing the genes reruns no calling).
MERGED_CALLS = (
    f"{OUTPUT_DIR}/mutation/{{tumor}}/{{tumor}}.genomon_mutation.calls.txt"
    if ANNOTATION.enabled
    else mutation_result("{tumor}", ".txt")
)


rule merge_mutation:
    input:
        regions=lambda wildcards: expand(
            rules.identify_mutations.output[0],
            tumor=wildcards.tumor,
            region=MUTATION_REGIONS,
        ),
    output:
        # The unfiltered calls, kept: the final filter below (and the gene annotation) reads
        # them, so retuning it reruns neither this job nor the per-region calls (whose files are
        # temporary). With gene annotation, result.txt is the annotation's (rules/annotation.smk).
        result=MERGED_CALLS,
    log:
        log_path("merge_mutation", "{tumor}"),
    benchmark:
        bench_path("merge_mutation", "{tumor}")
    priority: config["priorities"]["merge_mutation"]
    conda:
        "../../envs/python.yaml"
    envmodules:
        *env_modules("python"),
    params:
        shape=lambda wildcards: " ".join(
            flag
            for flag, on in (
                ("--paired", PAIRS[wildcards.tumor].normal),
                ("--panel", PAIRS[wildcards.tumor].panel),
                ("--hotspot", HOTSPOT_DB and PAIRS[wildcards.tumor].normal),
            )
            if on
        ),
        versions=tool_versions,
        work_dir_setup=work_dir_setup("merge_mutation"),
    shell:
        """
        (
            {params.work_dir_setup} {log:q}
            printf '%s\\n' {input.regions:q} >"$work/regions.txt"
            genomon_python -m genomon_smk.steps.merge_mutation result --out {output.result:q} {params.shape} \
                {params.versions} --regions-file "$work/regions.txt"
        ) >{log:q} 2>&1
        """


rule filter_mutation:
    input:
        result=mutation_result("{tumor}", ".txt"),
        reference=REFERENCE,
        hotspot_db=[HOTSPOT_DB] if HOTSPOT_DB else [],
    output:
        filtered=mutation_result("{tumor}", ".filt.txt"),
        vcf=mutation_result("{tumor}", ".filt.vcf.gz"),
        tbi=mutation_result("{tumor}", ".filt.vcf.gz.tbi"),
        # Every call of result.txt, FILTER naming the thresholds it fails: relax a filter
        # without rerunning anything.
        all_vcf=mutation_result("{tumor}", ".vcf.gz"),
        all_tbi=mutation_result("{tumor}", ".vcf.gz.tbi"),
    log:
        log_path("filter_mutation", "{tumor}"),
    benchmark:
        bench_path("filter_mutation", "{tumor}")
    priority: config["priorities"]["filter_mutation"]
    conda:
        "../../envs/python.yaml"
    envmodules:
        *env_modules("python"),
    params:
        # With a hotspot database, the rows it names are kept (tumor-only pairs too, as Genomon).
        # Not a function of `input`: Snakemake would not record it, and retuning would not rerun.
        mutil=lambda wildcards: config_options(
            "mutation_util",
            "pair_params" if PAIRS[wildcards.tumor].normal else "single_params",
        )
        + (f" --hotspot_db {shlex.quote(HOTSPOT_DB)}" if HOTSPOT_DB else ""),
        normal=lambda wildcards: (
            f"--normal {PAIRS[wildcards.tumor].normal}"
            if PAIRS[wildcards.tumor].normal
            else ""
        ),
        # genomon-smk's own mutil runs in the job's one process (steps.merge_mutation filter).
        mutil_tool=TOOLS["mutil"],
    shell:
        """
        (
            genomon_python -m genomon_smk.steps.merge_mutation filter --result {input.result:q} \
                --filtered {output.filtered:q} --mutil-command={params.mutil_tool:q} --mutil-options={params.mutil:q} \
                --reference {input.reference:q} --out {output.vcf:q} --all-vcf {output.all_vcf:q} \
                --tumor {wildcards.tumor} {params.normal} --hotspot-db {input.hotspot_db:q}
        ) >{log:q} 2>&1
        """


rule mutation_summary:
    input:
        result=mutation_result("{tumor}", ".txt"),
        filtered=rules.filter_mutation.output.filtered,
    output:
        tsv=report(
            f"{MUTATION_SUMMARY_PREFIX}.tsv",
            caption="../report/mutation_summary_tsv.rst",
            category="Mutations",
            subcategory="{tumor}",
            labels={"content": "counts (TSV)"},
        ),
        png=report(
            f"{MUTATION_SUMMARY_PREFIX}.png",
            caption="../report/mutation_summary_png.rst",
            category="Mutations",
            subcategory="{tumor}",
            labels={"content": "summary plot"},
        ),
    log:
        log_path("mutation_summary", "{tumor}"),
    benchmark:
        bench_path("mutation_summary", "{tumor}")
    conda:
        "../../envs/plot.yaml"
    envmodules:
        *env_modules("plot"),
    params:
        # matplotlib's font cache goes to the job's work directory (MPLCONFIGDIR), not to $HOME.
        work_dir_setup=work_dir_setup("mutation_summary", tier="node_local"),
    shell:
        """
        (
            {params.work_dir_setup} {log:q}
            genomon_python -m genomon_smk.steps.mutation_summary --result {input.result:q} \
                --filtered {input.filtered:q} --tumor {wildcards.tumor:q} \
                --tsv {output.tsv:q} --png {output.png:q}
        ) >{log:q} 2>&1
        """


# What `rule all` asks for: every pair's summary (TSV and plot).
MUTATION_SUMMARY_TARGETS = expand(rules.mutation_summary.output, tumor=PAIRS)
