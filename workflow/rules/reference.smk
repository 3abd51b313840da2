"""Reference set-up: what a user brings -> what the pipeline reads, built once into resources_dir
(genomon_smk.plan.setup_build plans it: a directory per input, keyed by its paths, sizes and
dates, which every later run, cohort or output directory reuses).

reference_fasta (FASTA(s), plain/gzip/bgzip, concatenated) -> reference_fai (samtools faidx) and
reference_bwa_index (bwa index); simple_repeat_db (UCSC simpleRepeat -> bgzip + tabix). Only the
rules with something to build exist: a reference given with its indexes, a prepared database, or
a build another project completed, is used in place; the jobs' outputs are the project's links
to the shared files, which no job of another project removes. `snakemake ... setup` builds them alone (e.g. once, before several projects
that share one resources_dir start).
"""

# Each build is named by its directory (<name>-<key>) in logs and benchmarks.
REFERENCE_BUILD = os.path.basename(os.path.dirname(REFERENCE))
SIMPLE_REPEAT_BUILD = (
    os.path.basename(os.path.dirname(SIMPLE_REPEAT.db)) if SIMPLE_REPEAT else None
)
# Runs of other projects may build the same directory at the same moment: one builds, the
# others wait and find it built. ($genomon_scripts: job-shell.sh's; no checkout path in params.)
BUILD_ONCE = 'source "$genomon_scripts/build-once.sh"'
# The reference and the simple-repeat database: built into resources_dir (the shared files are
# no job's output), linked into the project (genomon_smk.plan.setup_build). The build's
# directory under resources_dir only: $genomon_resources (the shell prefix's) is not a param.
BUILD_SHARED = 'source "$genomon_scripts/build-shared.sh"'

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
        envmodules:
            *env_modules("python"),
        resources:
            **FACTS["reference_fasta"].resources,
        params:
            build_shared=BUILD_SHARED,
            build=f"reference/{REFERENCE_BUILD}",
            name=os.path.basename(REFERENCE),
        shell:
            "{params.build_shared} {params.build:q} {output:q} > {log:q} 2>&1"
            ' && genomon_python -m genomon_smk.steps.reference_setup fasta --out "$shared_dir"/{params.name:q}'
            " {input.sources:q} >> {log:q} 2>&1"
            " && link_built"

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
        envmodules:
            *env_modules("python"),
        resources:
            **FACTS["reference_fai"].resources,
        params:
            build_shared=BUILD_SHARED,
            build=f"reference/{REFERENCE_BUILD}",
            name=os.path.basename(REFERENCE),
        shell:
            # Renamed when whole: resources/ may be read by runs that did not see this job fail.
            "{params.build_shared} {params.build:q} {output:q} > {log:q} 2>&1"
            ' && fasta="$shared_dir"/{params.name:q}'
            ' && samtools faidx --fai-idx "$fasta.fai.partial" "$fasta" >> {log:q} 2>&1'
            ' && mv "$fasta.fai.partial" "$fasta.fai"'
            " && link_built"

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
        envmodules:
            *env_modules("map"),
        resources:
            **FACTS["reference_bwa_index"].resources,
        params:
            suffixes=" ".join(BWA_INDEX_SUFFIXES),
            build_shared=BUILD_SHARED,
            build=f"reference/{REFERENCE_BUILD}",
            name=os.path.basename(REFERENCE),
        shell:
            """
            {params.build_shared} {params.build:q} {output:q} >{log:q} 2>&1
            fasta="$shared_dir"/{params.name:q}
            bwa index -p "$fasta.partial" "$fasta" >>{log:q} 2>&1
            for suffix in {params.suffixes}; do mv "$fasta.partial$suffix" "$fasta$suffix"; done
            link_built
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
        envmodules:
            *env_modules("python"),
        resources:
            **FACTS["simple_repeat_db"].resources,
        params:
            build_shared=BUILD_SHARED,
            build=f"simple_repeat/{SIMPLE_REPEAT_BUILD}",
            name=os.path.basename(SIMPLE_REPEAT.db),
        shell:
            "{params.build_shared} {params.build:q} {output:q} > {log:q} 2>&1"
            ' && genomon_python -m genomon_smk.steps.reference_setup simple-repeat --out "$shared_dir"/{params.name:q}'
            " {input.table:q} >> {log:q} 2>&1"
            " && link_built"


localrules:
    setup,


rule setup:
    input:
        [path for files in SETUP_OUTPUTS.values() for path in files],
