"""Split files: round-robin split of each sample's FASTQ pairs into a fixed number of chunks."""


rule split_fastq:
    input:
        fq1=lambda wildcards: [lane.fq1 for lane in sample_lanes(wildcards.sample)],
        fq2=lambda wildcards: [lane.fq2 for lane in sample_lanes(wildcards.sample)],
    output:
        r1=temp(
            expand(
                tier_file("split_fastq", "split/{{sample}}/{chunk}_R1.fastq"),
                chunk=CHUNKS,
            )
        ),
        r2=temp(
            expand(
                tier_file("split_fastq", "split/{{sample}}/{chunk}_R2.fastq"),
                chunk=CHUNKS,
            )
        ),
        counts=f"{OUTPUT_DIR}/qc/{{sample}}/{{sample}}.fastq_counts.json",
    log:
        log_path("split_fastq", "{sample}"),
    benchmark:
        bench_path("split_fastq", "{sample}")
    conda:
        "../../envs/python.yaml"
    params:
        python=PYTHON,
    shell:
        "{params.python} -m genomon_smk.fastq_split --sample {wildcards.sample:q}"
        " --fq1 {input.fq1:q} --fq2 {input.fq2:q}"
        " --out-r1 {output.r1:q} --out-r2 {output.r2:q} --counts {output.counts:q} > {log:q} 2>&1"
