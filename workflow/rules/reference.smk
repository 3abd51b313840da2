"""Reference set-up: what a user brings -> what the pipeline reads, built once into resources_dir
(genomon_smk.plan.setup_build plans it: a directory per input, keyed by its paths, sizes and
dates, which every later run, cohort or output directory reuses).

reference_fasta (FASTA(s), plain/gzip/bgzip, concatenated) -> reference_fai (samtools faidx) and
reference_bwa_index (bwa index); simple_repeat_db (UCSC simpleRepeat -> bgzip + tabix). Only the
rules with something to build exist: a reference given with its indexes, or a prepared database,
is used in place. `snakemake ... setup` builds them alone (e.g. once, before several projects
that share one resources_dir start).
"""

# Each build is named by its directory (<name>-<key>) in logs and benchmarks.
REFERENCE_BUILD = os.path.basename(os.path.dirname(REFERENCE))
SIMPLE_REPEAT_BUILD = (
    os.path.basename(os.path.dirname(SIMPLE_REPEAT.db)) if SIMPLE_REPEAT else None
)
# Runs of other projects may build the same directory at the same moment: one builds, the
# others wait and find it built.
# ($genomon_scripts: job-shell.sh's; no checkout path in params.)
BUILD_ONCE = 'source "$genomon_scripts/build-once.sh"'

if REFERENCE_PLAN.built:

    rule reference_fasta:
        input:
            sources=REFERENCE_PLAN.sources,
        output:
            fasta=REFERENCE,
        log:
            log_path("reference_fasta", REFERENCE_BUILD),
        benchmark:
            bench_path("reference_fasta", REFERENCE_BUILD)
        conda:
            "../../envs/python.yaml"
        resources:
            **FACTS["reference_fasta"].resources,
        params:
            build_once=BUILD_ONCE,
        shell:
            "{params.build_once} {output:q} > {log:q} 2>&1"
            " && genomon_python -m genomon_smk.steps.reference_setup fasta --out {output.fasta:q}"
            " {input.sources:q} >> {log:q} 2>&1"

    rule reference_fai:
        input:
            fasta=rules.reference_fasta.output.fasta,
        output:
            fai=REFERENCE_PLAN.fai,
        log:
            log_path("reference_fai", REFERENCE_BUILD),
        benchmark:
            bench_path("reference_fai", REFERENCE_BUILD)
        conda:
            "../../envs/python.yaml"
        resources:
            **FACTS["reference_fai"].resources,
        params:
            build_once=BUILD_ONCE,
        shell:
            # Renamed when whole: resources/ may be read by runs that did not see this job fail.
            "{params.build_once} {output:q} > {log:q} 2>&1"
            " && samtools faidx --fai-idx {output.fai:q}.partial {input.fasta:q} >> {log:q} 2>&1"
            " && mv {output.fai:q}.partial {output.fai:q}"

    rule reference_bwa_index:
        input:
            fasta=rules.reference_fasta.output.fasta,
        output:
            index=REFERENCE_PLAN.bwa_index,
        log:
            log_path("reference_bwa_index", REFERENCE_BUILD),
        benchmark:
            bench_path("reference_bwa_index", REFERENCE_BUILD)
        conda:
            "../../envs/map.yaml"
        resources:
            **FACTS["reference_bwa_index"].resources,
        params:
            suffixes=" ".join(BWA_INDEX_SUFFIXES),
            build_once=BUILD_ONCE,
        shell:
            """
            {params.build_once} {output:q} >{log:q} 2>&1
            bwa index -p {input.fasta:q}.partial {input.fasta:q} >>{log:q} 2>&1
            for suffix in {params.suffixes}; do mv {input.fasta:q}.partial$suffix {input.fasta:q}$suffix; done
            """


if SIMPLE_REPEAT and SIMPLE_REPEAT.built:

    rule simple_repeat_db:
        input:
            table=SIMPLE_REPEAT.source,
        output:
            db=SIMPLE_REPEAT.files[0],
            tbi=SIMPLE_REPEAT.files[1],
        log:
            log_path("simple_repeat_db", SIMPLE_REPEAT_BUILD),
        benchmark:
            bench_path("simple_repeat_db", SIMPLE_REPEAT_BUILD)
        conda:
            "../../envs/python.yaml"
        resources:
            **FACTS["simple_repeat_db"].resources,
        params:
            build_once=BUILD_ONCE,
        shell:
            "{params.build_once} {output:q} > {log:q} 2>&1"
            " && genomon_python -m genomon_smk.steps.reference_setup simple-repeat --out {output.db:q}"
            " {input.table:q} >> {log:q} 2>&1"


localrules:
    setup,


rule setup:
    input:
        [path for files in SETUP_OUTPUTS.values() for path in files],
