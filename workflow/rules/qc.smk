"""QC, as Genomon's QC stage: per sample samtools stats / flagstat and mosdepth coverage of the
final BAM, the per-region duplicate metrics summed into one Picard DuplicationMetrics file, a
read-pair integrity check against the FASTQ split's counts, and one MultiQC report (with the SV
stage's filtered junctions per tumor and parse clusters and reads per sample, when SVs are
detected).
"""

QC_PREFIX = f"{OUTPUT_DIR}/qc/{{sample}}/{{sample}}"
COVERAGE_DEPTHS = [10, 20, 30]


rule bam_stats:
    input:
        bam=final_bam("{sample}"),
    output:
        stats=f"{QC_PREFIX}.samtools_stats.txt",
        flagstat=f"{QC_PREFIX}.flagstat.txt",
    log:
        log_path("bam_stats", "{sample}"),
    benchmark:
        bench_path("bam_stats", "{sample}")
    conda:
        "../../envs/qc.yaml"
    envmodules:
        *env_modules("qc"),
    shell:
        """
        samtools stats {input.bam:q} >{output.stats:q} 2>{log:q}
        samtools flagstat {input.bam:q} >{output.flagstat:q} 2>>{log:q}
        """


rule read_pair_integrity:
    input:
        stats=rules.bam_stats.output.stats,
        counts=rules.split_fastq.output.counts,
    output:
        report=f"{QC_PREFIX}.integrity.txt",
    log:
        log_path("read_pair_integrity", "{sample}"),
    benchmark:
        bench_path("read_pair_integrity", "{sample}")
    conda:
        "../../envs/python.yaml"
    envmodules:
        *env_modules("python"),
    shell:
        """
        if ! genomon_python -m genomon_smk.steps.qc integrity --sample {wildcards.sample:q} \
            --counts {input.counts:q} --stats {input.stats:q} --out {output.report:q} 2>{log:q}; then
            cat {log:q} >&2
            exit 1
        fi
        """


rule coverage:
    input:
        bam=final_bam("{sample}"),
        bai=final_bam("{sample}", ".bai"),
    output:
        summary=f"{QC_PREFIX}.mosdepth.summary.txt",
        dist=f"{QC_PREFIX}.mosdepth.global.dist.txt",
        table=report(
            f"{QC_PREFIX}.coverage.tsv",
            caption="../report/coverage.rst",
            category="QC",
            subcategory="Coverage",
            labels={"sample": "{sample}"},
        ),
    log:
        log_path("coverage", "{sample}"),
    benchmark:
        bench_path("coverage", "{sample}")
    conda:
        "../../envs/qc.yaml"
    envmodules:
        *env_modules("qc"),
    threads: 1
    params:
        prefix=QC_PREFIX,
        depths=COVERAGE_DEPTHS,
    shell:
        """
        # -n: no per-base output; the summary and the cumulative distribution are what QC reads.
        mosdepth -n -t {threads} {params.prefix:q} {input.bam:q} 2>{log:q}
        genomon_python -m genomon_smk.steps.qc coverage --sample {wildcards.sample:q} \
            --summary {output.summary:q} --dist {output.dist:q} --depths {params.depths} \
            --out {output.table:q} 2>>{log:q}
        """


rule duplication_metrics:
    input:
        bam=final_bam("{sample}"),
        regions=expand(
            rules.markdup.output.metrics, region=REGION_NAMES, allow_missing=True
        ),
    output:
        metrics=f"{QC_PREFIX}.markdup_metrics.txt",
    log:
        log_path("duplication_metrics", "{sample}"),
    benchmark:
        bench_path("duplication_metrics", "{sample}")
    conda:
        "../../envs/python.yaml"
    envmodules:
        *env_modules("python"),
    shell:
        "genomon_python -m genomon_smk.steps.qc sum-markdup --bam {input.bam:q} --out {output.metrics:q}"
        " {input.regions:q} 2>{log:q}"


rule sv_multiqc_tables:
    input:
        summaries=lambda wildcards: expand(
            rules.sv_summary.output.tsv, sv_tumor=SV_PAIRS
        ),
        parsed=lambda wildcards: [
            sv_parse_files(name)[kind]
            for name in SV_PARSED
            for kind in ("junction", "improper")
        ],
    output:
        # MultiQC custom content (the _mqc.tsv suffix): one table of each.
        svs=f"{OUTPUT_DIR}/qc/genomon_sv_mqc.tsv",
        parse_counts=f"{OUTPUT_DIR}/qc/genomon_sv_parse_mqc.tsv",
    log:
        log_path("sv_multiqc_tables", "all"),
    benchmark:
        bench_path("sv_multiqc_tables", "all")
    conda:
        "../../envs/python.yaml"
    envmodules:
        *env_modules("python"),
    params:
        parsed=[f"{name}={sv_prefix(name)}" for name in SV_PARSED],
    shell:
        """
        genomon_python -m genomon_smk.steps.sv_summary multiqc --summaries {input.summaries:q} \
            --parsed {params.parsed:q} --svs {output.svs:q} --parse-counts {output.parse_counts:q} 2>{log:q}
        """


rule multiqc:
    input:
        # The cohort's files: listed when the job is planned (not in every job's parse).
        stats=lambda wildcards: expand(rules.bam_stats.output.stats, sample=QC_SAMPLES),
        flagstat=lambda wildcards: expand(
            rules.bam_stats.output.flagstat, sample=QC_SAMPLES
        ),
        summary=lambda wildcards: expand(
            rules.coverage.output.summary, sample=QC_SAMPLES
        ),
        dist=lambda wildcards: expand(rules.coverage.output.dist, sample=QC_SAMPLES),
        duplication=lambda wildcards: expand(
            rules.duplication_metrics.output.metrics, sample=MAPPED_QC_SAMPLES
        ),
        # The report is made only for BAMs that passed the integrity check.
        integrity=lambda wildcards: expand(
            rules.read_pair_integrity.output.report, sample=MAPPED_QC_SAMPLES
        ),
        # The SV stage's tables, when it runs.
        sv=rules.sv_multiqc_tables.output if SV_PAIRS else [],
    output:
        # MultiQC's default names (multiqc_report.html, multiqc_data), in the report's directory.
        report=report(
            f"{OUTPUT_DIR}/qc/multiqc_report.html",
            caption="../report/multiqc.rst",
            category="QC",
            subcategory="MultiQC",
            labels={"report": "MultiQC (all samples)"},
        ),
        data=directory(f"{OUTPUT_DIR}/qc/multiqc_data"),
    log:
        log_path("multiqc", "all"),
    benchmark:
        bench_path("multiqc", "all")
    conda:
        "../../envs/qc.yaml"
    envmodules:
        *env_modules("qc"),
    params:
        # Sample names from the file names without the QC suffixes; no network (no version check).
        config="extra_fn_clean_exts: [.samtools_stats, .flagstat, .markdup]",
    shell:
        """
        genomon_python -m multiqc --force --no-version-check --no-ansi --no-ai \
            --cl-config {params.config:q} --outdir "$(dirname {output.report:q})" \
            {input.stats:q} {input.flagstat:q} {input.summary:q} {input.dist:q} {input.duplication:q} \
            {input.sv:q} >{log:q} 2>&1
        """


# What `rule all` asks for: every sample's QC files (the integrity check included) and the report
# (none when a Genomon sheet's [qc] section names no sample).
QC_TARGETS = [
    *expand(rules.read_pair_integrity.output.report, sample=MAPPED_QC_SAMPLES),
    *expand(rules.coverage.output.table, sample=QC_SAMPLES),
    *expand(rules.duplication_metrics.output.metrics, sample=MAPPED_QC_SAMPLES),
    *(rules.multiqc.output if QC_SAMPLES else []),
]
