"""Bam tofastq (Genomon's [bam_tofastq]): a sample given as BAM files is mapped again from their
reads. The reads of all its BAMs become one FASTQ pair, which split_fastq then splits as it
splits any lane."""


rule bam_to_fastq:
    input:
        bams=lambda wildcards: COHORT.bam_sources[wildcards.sample],
    output:
        fq1=temp(converted_fastq("{sample}", 1)),
        fq2=temp(converted_fastq("{sample}", 2)),
    log:
        log_path("bam_to_fastq", "{sample}"),
    benchmark:
        bench_path("bam_to_fastq", "{sample}")
    wildcard_constraints:
        sample=one_of(COHORT.bam_sources),
    conda:
        "../../envs/map.yaml"
    threads: 2
    params:
        work_dir_setup=work_dir_setup("bam_to_fastq", tier="node_local"),
    shell:
        # Primary records only, grouped by name, without /1 /2 suffixes; reads that lost their
        # mate (singletons) cannot be mapped as pairs and are dropped, as Genomon's bamtofastq does.
        """
        (
            {params.work_dir_setup} {log:q}
            samtools cat -o "$work/all.bam" {input.bams:q}
            samtools view -u -F 0x900 "$work/all.bam" \
                | samtools collate -@ {threads} -u -O - "$work/collate" \
                | samtools fastq -@ {threads} -n -c 6 -1 {output.fq1:q} -2 {output.fq2:q} \
                    -0 /dev/null -s /dev/null -
        ) >{log:q} 2>&1
        """
