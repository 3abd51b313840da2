"""Split files: round-robin split of each sample's FASTQ pairs into a fixed number of chunks.

The chunks of a sample share one directory output: one DAG edge per map job, and Snakemake's
temp-file bookkeeping stays linear in the chunk count."""


rule split_fastq:
    input:
        fq1=lambda wildcards: [lane.fq1 for lane in sample_lanes(wildcards.sample)],
        fq2=lambda wildcards: [lane.fq2 for lane in sample_lanes(wildcards.sample)],
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
    params:
        python=PYTHON,
        chunks=len(CHUNKS),
    shell:
        "{params.python} -m genomon_smk.fastq_split --sample {wildcards.sample:q}"
        " --fq1 {input.fq1:q} --fq2 {input.fq2:q}"
        " --out-dir {output.chunks:q} --chunks {params.chunks} --counts {output.counts:q} > {log:q} 2>&1"
