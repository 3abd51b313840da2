"""Split files: round-robin split of each sample's FASTQ pairs into a fixed number of chunks.

The chunks of a sample share one directory output: one DAG edge per map job, and Snakemake's
temp-file bookkeeping stays linear in the chunk count."""


rule stagger_start:
    output:
        temp(f"{OUTPUT_DIR}/stagger/{{sample}}.started"),
    log:
        log_path("stagger_start", "{sample}"),
    benchmark:
        bench_path("stagger_start", "{sample}")
    # A timer, not work: on the host Snakemake runs on, holding no core or cluster slot.
    localrule: True
    conda:
        "../../envs/python.yaml"
    envmodules:
        *env_modules("python"),
    threads: 0
    params:
        seconds=lambda wildcards: STAGGER[wildcards.sample],
    shell:
        "(sleep {params.seconds} && touch {output:q}) > {log:q} 2>&1"


rule split_fastq:
    input:
        fq1=lambda wildcards: [lane.fq1 for lane in sample_lanes(wildcards.sample)],
        fq2=lambda wildcards: [lane.fq2 for lane in sample_lanes(wildcards.sample)],
        # Staggered start (config stagger_minutes): the sample's pair waits its turn.
        stagger=lambda wildcards: (
            expand(rules.stagger_start.output[0], sample=wildcards.sample)
            if wildcards.sample in STAGGER
            else []
        ),
    output:
        chunks=temp(directory(tier_file("split_fastq", "split/{sample}"))),
        counts=f"{OUTPUT_DIR}/qc/{{sample}}/{{sample}}.fastq_counts.json",
    log:
        log_path("split_fastq", "{sample}"),
    benchmark:
        bench_path("split_fastq", "{sample}")
    priority: config["priorities"]["split_fastq"]
    conda:
        "../../envs/python.yaml"
    envmodules:
        *env_modules("python"),
    params:
        chunks=len(CHUNKS),
        # Not in the command: a FASTQ replaced under its name changes it, and the sample reruns.
        inputs_held=lambda wildcards: sample_fingerprint(wildcards.sample),
    shell:
        "genomon_python -m genomon_smk.steps.fastq_split --sample {wildcards.sample:q}"
        " --fq1 {input.fq1:q} --fq2 {input.fq2:q}"
        " --out-dir {output.chunks:q} --chunks {params.chunks} --counts {output.counts:q} > {log:q} 2>&1"
