"""Bam tofastq (Genomon's [bam_tofastq]): a sample given as BAM files is mapped again from their
reads. Each BAM becomes one FASTQ pair, one lane of the sample, which split_fastq then splits as
it splits any lane (so a read's mate must be in the same BAM, as in Genomon)."""


rule bam_to_fastq:
    input:
        bam=lambda wildcards: converted_bam(wildcards.sample, wildcards.part),
        # Staggered start (config stagger_minutes): the sample's first job waits its pair's turn.
        stagger=lambda wildcards: (
            expand(rules.stagger_start.output[0], sample=wildcards.sample)
            if wildcards.sample in STAGGER
            else []
        ),
    output:
        fq1=temp(converted_fastq("{sample}", "{part}", 1)),
        fq2=temp(converted_fastq("{sample}", "{part}", 2)),
    log:
        log_path("bam_to_fastq", "{sample}/{part}"),
    benchmark:
        bench_path("bam_to_fastq", "{sample}/{part}")
    wildcard_constraints:
        sample=one_of(COHORT.bam_sources),
        part=r"bam\d+",
    priority: config["priorities"]["bam_to_fastq"]
    conda:
        "../../envs/map.yaml"
    envmodules:
        *env_modules("map"),
    threads: 2
    params:
        work_dir_setup=work_dir_setup("bam_to_fastq"),
    shell:
        # Primary records that passed QC only (no secondary, supplementary or QC-failed: 0xB00,
        # Genomon's exclude=QCFAIL,SECONDARY,SUPPLEMENTARY), grouped by name (collate's
        # temporaries in $work), names without /1 /2; duplicate flags are ignored (markdup marks
        # again). Reads whose mate is not in this BAM cannot be mapped as pairs: dropped, as
        # Genomon's bamtofastq does. Level 1: the files live only until the split has read them.
        """
        {params.work_dir_setup} {log:q}
        (
            samtools view -u -F 0xB00 {input.bam:q} \
                | samtools collate -@ {threads} -u -O - "$work/collate" \
                | samtools fastq -@ {threads} -n -c 1 -1 {output.fq1:q} -2 {output.fq2:q} \
                    -0 /dev/null -s /dev/null -
        ) >{log:q} 2>&1
        """
